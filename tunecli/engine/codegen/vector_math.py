"""``exp``, ``tanh``, ``erf`` and ``sigmoid`` of float32 vectors in straight-line SIMD code.

LLVM has no vector math library here: ``llvm.exp.v16f32`` becomes sixteen calls of libm's
``expf``, one lane at a time. These emitters compute every lane at once instead, with the
Cephes single-precision algorithms (a few ulp from libm, tested against numpy):

* ``exp(x) = 2**n * e**r`` with ``n = round(x / ln 2)``, ``r = x - n ln 2`` (ln 2 split in two
  parts so ``r`` is exact) and a degree-7 polynomial for ``e**r``; ``2**n`` is built from the
  exponent bits in two halves so results down to the denormals are right. Above 88.72…
  gives ``inf``, below -103.97… gives 0, NaN stays NaN.  On AVX-512 targets (the kernel's
  ``FunctionContext.target``) 16 lanes multiply by ``2**n`` with ``vscalefps`` instead, which
  gives the same values without the special lanes' selects.
* ``sigmoid(x) = 1 / (1 + exp(-x))`` with the same ``exp`` on a clamped ``-x``, whose clamps stand
  for the special lanes' selects (an activation read by every element of a convolution's output).
* ``tanh(x)``: an odd polynomial for ``|x| < 0.625`` (where ``1 - 2/(e**2x + 1)`` would lose
  digits to cancellation), ``sign(x) * (1 - 2 / (exp(2|x|) + 1))`` elsewhere.
* ``erf(x)`` (libm's ``erff`` is scalar; GELU reads it per element): ``x * P(x**2) / Q(x**2)``
  with ``x`` clamped to ``[-4, 4]`` (``erf(4)`` rounds to 1 in float32), ``P`` and ``Q`` of degree
  5, a rational fit of ``erf`` made for this module by reweighted least squares: within about
  3.5e-7 of ``erf`` everywhere in float32 (and within ``[-1, 1]``), in 12 multiply-adds and one
  division.

Polynomials are evaluated by Horner's rule with fused multiply-adds (the ``contract`` flag).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from llvmlite import ir

from .llvm_types import constant

if TYPE_CHECKING:
    from .emit_expr import ExprEmitter

_EXP_HI = 88.72283905206835  # above: overflow to inf
_EXP_LO = -103.97208  # below: underflow to 0
_SIGMOID_LO = -30.0  # exp below it vanishes beside 1 in float32: sigmoid rounds to 1
#: Lanes of AVX-512's ``vscalefps`` and the clamps of ``x`` around it: past them ``exp`` is inf
#: (``2**130``) or 0 (``2**-164``) whatever ``e**r`` is.
_SCALEF_LANES = 16
_SCALEF_LO, _SCALEF_HI = _EXP_LO - 10.0, _EXP_HI + 1.0
#: Fast-math flag letting the compiler fuse a multiply and an add (one rounding instead of two).
CONTRACT = ("contract",)
_LOG2E = 1.44269504088896341
_LN2_HI = 0.693359375
_LN2_LO = -2.12194440e-4
_EXP_POLY = (1.9875691500e-4, 1.3981999507e-3, 8.3334519073e-3, 4.1665795894e-2, 1.6666665459e-1,
             5.0000001201e-1)
_TANH_POLY = (-5.70498872745e-3, 2.06390887954e-2, -5.37397155531e-2, 1.33314422036e-1,
              -3.33332819422e-1)
_TANH_SMALL = 0.625
#: ``P`` and ``Q`` of erf's rational fit in ``x**2``, highest degree first.
_ERF_P = (1.974812448679586e-06, 0.000288042618194595, 0.004003715701401234, 0.053467702120542526,
          0.19625072181224823, 1.128378987312317)
_ERF_Q = (3.748074232134968e-05, 0.0012163760839030147, 0.015444563701748848, 0.11647714674472809,
          0.5072538256645203, 1.0)
_ERF_ONE = 4.0  # from here on erf(x) rounds to sign(x) in float32


def is_vector_f32(ty: ir.Type) -> bool:
    """True for ``<N x float>`` with N > 1, the types these emitters handle."""
    return isinstance(ty, ir.VectorType) and isinstance(ty.element, ir.FloatType) and ty.count > 1


def _poly(em: ExprEmitter, x: ir.Value, coefficients: tuple[float, ...]) -> ir.Value:
    """Horner's rule: ``c0 * x**(k-1) + ... + c(k-1)``."""
    b = em.builder
    f32 = f"float32x{x.type.count}"
    acc = constant(f32, coefficients[0])
    for c in coefficients[1:]:
        acc = b.fadd(b.fmul(acc, x, flags=CONTRACT), constant(f32, c), flags=CONTRACT)
    return acc


def _pow2(em: ExprEmitter, n: ir.Value, fty: ir.VectorType) -> ir.Value:
    """``2.0 ** n`` for integer lanes ``n`` with ``|n| <= 126`` (built from the exponent bits)."""
    b = em.builder
    i32 = f"int32x{fty.count}"
    bits = b.shl(b.add(n, constant(i32, 127)), constant(i32, 23))
    return b.bitcast(bits, fty)


def _exp_reduced(em: ExprEmitter, x: ir.Value) -> tuple[ir.Value, ir.Value]:
    """``(n, e**r)`` with ``exp(x) = 2**n * e**r``: ``n`` the float lanes of ``round(x / ln 2)``."""
    b = em.builder
    fty = x.type
    f32 = f"float32x{fty.count}"
    nearest = em.declare(f"llvm.roundeven.v{fty.count}f32", fty, [fty])
    nf = b.call(nearest, [b.fmul(x, constant(f32, _LOG2E))])
    r = b.fsub(x, b.fmul(nf, constant(f32, _LN2_HI), flags=CONTRACT), flags=CONTRACT)
    r = b.fsub(r, b.fmul(nf, constant(f32, _LN2_LO), flags=CONTRACT), flags=CONTRACT)
    r2 = b.fmul(r, r)
    er = b.fadd(b.fadd(b.fmul(_poly(em, r, _EXP_POLY), r2, flags=CONTRACT), r, flags=CONTRACT),
                constant(f32, 1.0))
    return nf, er


def _exp_core(em: ExprEmitter, x: ir.Value) -> ir.Value:
    """``exp`` of the lanes of ``x``, each within ``[_EXP_LO, _EXP_HI]``."""
    b = em.builder
    fty = x.type
    i32 = f"int32x{fty.count}"
    nf, er = _exp_reduced(em, x)
    n = b.fptosi(nf, ir.VectorType(ir.IntType(32), fty.count))
    half = b.ashr(n, constant(i32, 1))  # 2**n = 2**half * 2**(n - half), each factor a normal float
    return b.fmul(b.fmul(er, _pow2(em, half, fty)), _pow2(em, b.sub(n, half), fty))


def emit_exp(em: ExprEmitter, x: ir.Value) -> ir.Value:
    """``exp`` of every lane of the float32 vector ``x``."""
    b = em.builder
    f32 = f"float32x{x.type.count}"
    if x.type.count == _SCALEF_LANES and _has_scalef(em):
        return _exp_scalef(em, x)
    over = b.fcmp_ordered(">", x, constant(f32, _EXP_HI))
    under = b.fcmp_ordered("<", x, constant(f32, _EXP_LO))
    clamped = b.select(over, constant(f32, _EXP_HI), b.select(under, constant(f32, _EXP_LO), x))
    y = _exp_core(em, clamped)
    y = b.select(over, constant(f32, float("inf")), b.select(under, constant(f32, 0.0), y))
    return b.select(b.fcmp_unordered("uno", x, x), x, y)


def _has_scalef(em: ExprEmitter) -> bool:
    """Whether the kernel's target has AVX-512's ``vscalefps`` (its 512-bit form)."""
    target = getattr(getattr(em, "ctx", None), "target", None)
    return target is not None and target.vector_bits >= 512


def _exp_scalef(em: ExprEmitter, x: ir.Value) -> ir.Value:
    """``exp`` of 16 lanes as ``scalef(e**r, n)`` (AVX-512's ``x * 2**n`` in one rounding, which
    overflows to inf and underflows through the denormals to 0 by itself): ``x`` is only clamped so
    that ``r`` stays finite; ordered comparisons keep a NaN lane NaN."""
    b = em.builder
    fty = x.type
    f32 = f"float32x{fty.count}"
    x = b.select(b.fcmp_ordered("<", x, constant(f32, _SCALEF_LO)), constant(f32, _SCALEF_LO), x)
    x = b.select(b.fcmp_ordered(">", x, constant(f32, _SCALEF_HI)), constant(f32, _SCALEF_HI), x)
    nf, er = _exp_reduced(em, x)
    i16, i32 = ir.IntType(16), ir.IntType(32)
    scalef = em.declare("llvm.x86.avx512.mask.scalef.ps.512", fty, [fty, fty, fty, i16, i32])
    # all lanes written (mask -1), the current rounding mode (4)
    return b.call(scalef, [er, nf, ir.Constant(fty, None), ir.Constant(i16, -1), ir.Constant(i32, 4)])


def emit_sigmoid(em: ExprEmitter, x: ir.Value) -> ir.Value:
    """``1 / (1 + exp(-x))`` of every lane of the float32 vector ``x``.

    ``exp(-x)`` needs no special lanes here: ``-x`` clamped to ``[_SIGMOID_LO, _EXP_HI + 1]``
    keeps ``2 ** (n - 1)`` a normal float, ``(e**r + e**r) * 2 ** (n - 1)`` overflows to inf
    exactly where ``exp`` does (sigmoid 0, as the formula gives in float32), and at the low end
    ``exp`` is below float32's rounding of ``1 +`` (sigmoid 1); a NaN passes both clamps.
    """
    b = em.builder
    fty = x.type
    f32, i32 = f"float32x{fty.count}", f"int32x{fty.count}"
    t = b.fneg(x)
    t = b.select(b.fcmp_ordered(">", t, constant(f32, _EXP_HI + 1)), constant(f32, _EXP_HI + 1), t)
    t = b.select(b.fcmp_ordered("<", t, constant(f32, _SIGMOID_LO)), constant(f32, _SIGMOID_LO), t)
    nf, er = _exp_reduced(em, t)
    n = b.fptosi(nf, ir.VectorType(ir.IntType(32), fty.count))
    e = b.fmul(b.fadd(er, er), _pow2(em, b.sub(n, constant(i32, 1)), fty))
    one = constant(f32, 1.0)
    return b.fdiv(one, b.fadd(one, e))


def emit_tanh(em: ExprEmitter, x: ir.Value) -> ir.Value:
    """``tanh`` of every lane of the float32 vector ``x``."""
    b = em.builder
    fty = x.type
    f32 = f"float32x{fty.count}"
    fabs = em.declare(f"llvm.fabs.v{fty.count}f32", fty, [fty])
    copysign = em.declare(f"llvm.copysign.v{fty.count}f32", fty, [fty, fty])
    ax = b.call(fabs, [x])
    z = b.fmul(x, x)
    small = b.fadd(x, b.fmul(b.fmul(x, z), _poly(em, z, _TANH_POLY)))
    e2 = emit_exp(em, b.fadd(ax, ax))
    large = b.fsub(constant(f32, 1.0), b.fdiv(constant(f32, 2.0), b.fadd(e2, constant(f32, 1.0))))
    chosen = b.select(b.fcmp_ordered("<", ax, constant(f32, _TANH_SMALL)), small, large)
    return b.call(copysign, [chosen, x])  # tanh is odd; also keeps -0.0 (small gives +0.0 there)


def emit_erf(em: ExprEmitter, x: ir.Value) -> ir.Value:
    """``erf`` of every lane of the float32 vector ``x``."""
    b = em.builder
    f32 = f"float32x{x.type.count}"
    bound = constant(f32, _ERF_ONE)
    low = constant(f32, -_ERF_ONE)
    # compares, not maxnum/minnum: a NaN lane stays NaN
    xc = b.select(b.fcmp_ordered(">", x, bound), bound, b.select(b.fcmp_ordered("<", x, low), low, x))
    z = b.fmul(xc, xc)
    y = b.fdiv(b.fmul(xc, _poly(em, z, _ERF_P)), _poly(em, z, _ERF_Q))
    one, minus_one = constant(f32, 1.0), constant(f32, -1.0)  # the fit passes 1 by an ulp near 4
    y = b.select(b.fcmp_ordered("<", y, minus_one), minus_one, y)
    return b.select(b.fcmp_ordered(">", y, one), one, y)
