"""Math calls (``exp``, ``sqrt``, ``fma``, ...) as LLVM intrinsics, and intrinsic declaration.

Scalar and vector operands are handled alike (LLVM's vector intrinsics, ``llvm.sqrt.v16f32``),
except ``exp`` and ``tanh`` of float32 vectors, which LLVM would split into one libm call per
lane: :mod:`.vector_math` computes all lanes at once.  Functions without an LLVM intrinsic
(``erf``) call libm per lane.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from llvmlite import ir

from tunecli.engine.ir import expr as E
from tunecli.engine.ir.dtype import DataType
from tunecli.errors import CodegenError

from .llvm_types import constant, dtype_of, value_type
from .vector_math import emit_exp, emit_tanh, is_vector_f32

if TYPE_CHECKING:
    from .emit_expr import ExprEmitter

# IR call name -> (LLVM intrinsic base name, number of operands)
_FLOAT_INTRINSICS = {
    "exp": ("llvm.exp", 1), "exp2": ("llvm.exp2", 1), "log": ("llvm.log", 1), "log2": ("llvm.log2", 1),
    "log10": ("llvm.log10", 1), "sqrt": ("llvm.sqrt", 1), "tanh": ("llvm.tanh", 1), "sin": ("llvm.sin", 1),
    "cos": ("llvm.cos", 1), "tan": ("llvm.tan", 1), "fabs": ("llvm.fabs", 1), "floor": ("llvm.floor", 1),
    "ceil": ("llvm.ceil", 1), "trunc": ("llvm.trunc", 1), "round": ("llvm.roundeven", 1),
    "pow": ("llvm.pow", 2), "fma": ("llvm.fma", 3),
}
_LIBM = {"erf": {32: "erff", 64: "erf"}}
_VECTOR_MATH = {"exp": emit_exp, "tanh": emit_tanh}


def suffix(ty: ir.Type) -> str:
    """LLVM's mangling of an overloaded intrinsic type: ``f32``, ``v16f32``, ``i32``, ``p0``."""
    if isinstance(ty, ir.VectorType):
        return f"v{ty.count}{suffix(ty.element)}"
    if isinstance(ty, ir.HalfType):
        return "f16"
    if isinstance(ty, ir.FloatType):
        return "f32"
    if isinstance(ty, ir.DoubleType):
        return "f64"
    if isinstance(ty, ir.IntType):
        return f"i{ty.width}"
    if isinstance(ty, ir.PointerType):
        return "p0"
    raise CodegenError(f"codegen: no intrinsic mangling for LLVM type {ty}")


def declare(em: ExprEmitter, base: str, ret: ir.Type, args: list[ir.Type],
            overloads: list[ir.Type]) -> ir.Function:
    """Declare (once) the intrinsic ``base`` specialised for the ``overloads`` types."""
    name = ".".join([base] + [suffix(t) for t in overloads])
    return em.declare(name, ret, args)


def call_float_intrinsic(em: ExprEmitter, name: str, dtype: str, args: list[ir.Value]) -> ir.Value:
    """Call the LLVM intrinsic for IR call ``name`` on float operands of ``dtype``."""
    base, _ = _FLOAT_INTRINSICS[name]
    ty = value_type(dtype)
    if name in _VECTOR_MATH and is_vector_f32(ty):
        return _VECTOR_MATH[name](em, args[0])
    fn = declare(em, base, ty, [ty] * len(args), [ty])
    return em.builder.call(fn, args)


def emit_call(em: ExprEmitter, e: E.Call) -> ir.Value:
    """Emit the pure intrinsic call ``e``; raise CodegenError for an unknown name or bad operand."""
    t = dtype_of(e.dtype)
    if e.name == "sigmoid":
        _check_arity(e, 1)
        _check_float(e)
        x = em.expr(e.args[0])
        one = constant(e.dtype, 1.0)
        neg = em.builder.fsub(constant(e.dtype, 0.0), x)
        exp = call_float_intrinsic(em, "exp", e.dtype, [neg])
        return em.builder.fdiv(one, em.builder.fadd(one, exp))
    if e.name == "rsqrt":
        _check_arity(e, 1)
        _check_float(e)
        root = call_float_intrinsic(em, "sqrt", e.dtype, [em.expr(e.args[0])])
        return em.builder.fdiv(constant(e.dtype, 1.0), root)
    if e.name == "fabs" and not t.is_float:
        _check_arity(e, 1)
        x = em.expr(e.args[0])
        if t.code == "uint" or t.is_bool:
            return x
        fn = declare(em, "llvm.abs", x.type, [x.type, ir.IntType(1)], [x.type])
        return em.builder.call(fn, [x, ir.Constant(ir.IntType(1), 0)])
    if e.name in _FLOAT_INTRINSICS:
        _check_arity(e, _FLOAT_INTRINSICS[e.name][1])
        _check_float(e)
        return call_float_intrinsic(em, e.name, e.dtype, [em.expr(a) for a in e.args])
    if e.name in _LIBM:
        _check_arity(e, 1)
        _check_float(e)
        x = em.expr(e.args[0])
        if t.bits == 16:  # no half-precision libm: compute in float32
            wide = str(DataType("float", 32, t.lanes))
            y = _libm_per_lane(em, _LIBM[e.name][32], wide, em.builder.fpext(x, value_type(wide)))
            return em.builder.fptrunc(y, x.type)
        return _libm_per_lane(em, _LIBM[e.name][t.bits], e.dtype, x)
    raise CodegenError(f"codegen: unknown intrinsic {e.name!r} in {e}; known: "
                       f"{sorted([*_FLOAT_INTRINSICS, *_LIBM, 'sigmoid', 'rsqrt'])}")


def _libm_per_lane(em: ExprEmitter, symbol: str, dtype: str, x: ir.Value) -> ir.Value:
    """Call the scalar libm function ``symbol`` on each lane of ``x``."""
    t = dtype_of(dtype)
    scalar = value_type(t.element)
    fn = em.declare(symbol, scalar, [scalar])
    if t.lanes == 1:
        return em.builder.call(fn, [x])
    out = ir.Constant(x.type, ir.Undefined)
    for lane in range(t.lanes):
        idx = ir.Constant(ir.IntType(32), lane)
        out = em.builder.insert_element(out, em.builder.call(fn, [em.builder.extract_element(x, idx)]), idx)
    return out


def _check_arity(e: E.Call, n: int) -> None:
    if len(e.args) != n:
        raise CodegenError(f"codegen: {e.name} takes {n} operand(s), got {len(e.args)} in {e}")


def _check_float(e: E.Call) -> None:
    if not dtype_of(e.dtype).is_float or any(not dtype_of(a.dtype).is_float for a in e.args):
        raise CodegenError(f"codegen: {e.name} needs float operands, got {e} of dtype {e.dtype}")
