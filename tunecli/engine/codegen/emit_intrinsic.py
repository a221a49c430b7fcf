"""Math calls (``exp``, ``sqrt``, ``fma``, ...) and intrinsic declaration, for every backend.

The IR's math functions and their arities are the same on every target; which LLVM intrinsic
or library function computes each one is the backend's choice (``Backend.math_call``), given
the tables here: the LLVM intrinsic of each function (scalar and vector operands alike, as
``llvm.sqrt.v16f32``) and :func:`call_per_lane` for library functions taking scalars.
``sigmoid``, ``rsqrt`` and the integer ``fabs`` are composed here from the others.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from llvmlite import ir

from tunecli.engine.ir import expr as E
from tunecli.engine.ir.dtype import DataType
from tunecli.errors import CodegenError

from .llvm_types import constant, dtype_of, value_type

if TYPE_CHECKING:
    from .emit_expr import ExprEmitter

# IR call name -> (LLVM intrinsic base name, number of operands)
LLVM_INTRINSICS = {
    "exp": ("llvm.exp", 1), "exp2": ("llvm.exp2", 1), "log": ("llvm.log", 1), "log2": ("llvm.log2", 1),
    "log10": ("llvm.log10", 1), "sqrt": ("llvm.sqrt", 1), "tanh": ("llvm.tanh", 1), "sin": ("llvm.sin", 1),
    "cos": ("llvm.cos", 1), "tan": ("llvm.tan", 1), "fabs": ("llvm.fabs", 1), "floor": ("llvm.floor", 1),
    "ceil": ("llvm.ceil", 1), "trunc": ("llvm.trunc", 1), "round": ("llvm.roundeven", 1),
    "pow": ("llvm.pow", 2), "fma": ("llvm.fma", 3),
}
# IR call name -> number of operands, for the float functions without an LLVM intrinsic
LIBRARY_FUNCTIONS = {"erf": 1}
# every float math function -> number of operands
MATH_FUNCTIONS = {name: n for name, (_, n) in LLVM_INTRINSICS.items()} | LIBRARY_FUNCTIONS


def suffix(ty: ir.Type) -> str:
    """LLVM's mangling of an overloaded intrinsic type: ``f32``, ``v16f32``, ``i32``, ``p0``, ``p1``."""
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
        return f"p{ty.addrspace}"
    raise CodegenError(f"codegen: no intrinsic mangling for LLVM type {ty}")


def declare(em: ExprEmitter, base: str, ret: ir.Type, args: list[ir.Type],
            overloads: list[ir.Type]) -> ir.Function:
    """Declare (once) the intrinsic ``base`` specialised for the ``overloads`` types."""
    name = ".".join([base] + [suffix(t) for t in overloads])
    return em.declare(name, ret, args)


def call_llvm_intrinsic(em: ExprEmitter, name: str, dtype: str, args: list[ir.Value]) -> ir.Value:
    """Call the LLVM intrinsic of math function ``name`` on operands of ``dtype``."""
    base, _ = LLVM_INTRINSICS[name]
    ty = value_type(dtype)
    fn = declare(em, base, ty, [ty] * len(args), [ty])
    return em.builder.call(fn, args)


def emit_call(em: ExprEmitter, e: E.Call) -> ir.Value:
    """Emit the pure intrinsic call ``e``; raise CodegenError for an unknown name or bad operand."""
    value = em.backend.target_call(em, e)
    if value is not None:
        return value
    if e.name == "sigmoid":
        _check_arity(e, 1)
        _check_float(e)
        x = em.expr(e.args[0])
        one = constant(e.dtype, 1.0)
        neg = em.builder.fsub(constant(e.dtype, 0.0), x)
        exp = em.backend.math_call(em, "exp", e.dtype, [neg])
        return em.builder.fdiv(one, em.builder.fadd(one, exp))
    if e.name == "rsqrt":
        _check_arity(e, 1)
        _check_float(e)
        root = em.backend.math_call(em, "sqrt", e.dtype, [em.expr(e.args[0])])
        return em.builder.fdiv(constant(e.dtype, 1.0), root)
    t = dtype_of(e.dtype)
    if e.name == "fabs" and not t.is_float:
        _check_arity(e, 1)
        x = em.expr(e.args[0])
        if t.code == "uint" or t.is_bool:
            return x
        fn = declare(em, "llvm.abs", x.type, [x.type, ir.IntType(1)], [x.type])
        return em.builder.call(fn, [x, ir.Constant(ir.IntType(1), 0)])
    if e.name in MATH_FUNCTIONS:
        _check_arity(e, MATH_FUNCTIONS[e.name])
        _check_float(e)
        return em.backend.math_call(em, e.name, e.dtype, [em.expr(a) for a in e.args])
    raise CodegenError(f"codegen: unknown intrinsic {e.name!r} in {e}; known: "
                       f"{sorted([*MATH_FUNCTIONS, 'sigmoid', 'rsqrt'])}")


def call_per_lane(em: ExprEmitter, symbol: str, dtype: str, args: list[ir.Value]) -> ir.Value:
    """Call the scalar function ``symbol`` (a library's) on each lane of ``args`` of ``dtype``."""
    t = dtype_of(dtype)
    scalar = value_type(t.element)
    fn = em.declare(symbol, scalar, [scalar] * len(args))
    if t.lanes == 1:
        return em.builder.call(fn, args)
    out = ir.Constant(args[0].type, ir.Undefined)
    for lane in range(t.lanes):
        idx = ir.Constant(ir.IntType(32), lane)
        lanes = [em.builder.extract_element(a, idx) for a in args]
        out = em.builder.insert_element(out, em.builder.call(fn, lanes), idx)
    return out


def call_library(em: ExprEmitter, symbols: dict[int, str], dtype: str, args: list[ir.Value]) -> ir.Value:
    """Call a library's scalar function per lane: ``symbols`` maps 32 and 64 bits to its names.

    Libraries without half-precision functions: float16 operands are computed in float32.
    """
    t = dtype_of(dtype)
    if t.bits == 16:
        wide = str(DataType("float", 32, t.lanes))
        widened = [em.builder.fpext(a, value_type(wide)) for a in args]
        return em.builder.fptrunc(call_per_lane(em, symbols[32], wide, widened), args[0].type)
    return call_per_lane(em, symbols[t.bits], dtype, args)


def _check_arity(e: E.Call, n: int) -> None:
    if len(e.args) != n:
        raise CodegenError(f"codegen: {e.name} takes {n} operand(s), got {len(e.args)} in {e}")


def _check_float(e: E.Call) -> None:
    if not dtype_of(e.dtype).is_float or any(not dtype_of(a.dtype).is_float for a in e.args):
        raise CodegenError(f"codegen: {e.name} needs float operands, got {e} of dtype {e.dtype}")
