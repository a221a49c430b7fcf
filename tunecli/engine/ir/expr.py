"""Expression nodes shared by tensor expressions and the lowered loop nest.

Every node is immutable, has a ``dtype`` string, and lists its child attributes in ``_fields``
(visitors walk those).  Python operators build nodes: ``a + 1``, ``a < b``, ``a // 4``, ``a % 4``;
Python numbers are converted to constants of the other operand's type.  ``==`` and ``!=`` build
EQ/NE nodes whose truth value is object identity, so nodes still work as dict keys and in lists.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from tunecli.errors import ExprError

from .dtype import element_of, lanes_of, max_of, min_of, parse_dtype, promote
from .expr_like import ExprLike
from .node import Node, set_fields

if TYPE_CHECKING:
    from .stmt import Buffer


class Expr(Node):
    """Base of expressions."""

    __slots__ = ("dtype",)

    # arithmetic -----------------------------------------------------------------------------
    def __add__(self, other): return _binary(Add, self, other)
    def __radd__(self, other): return _binary(Add, other, self)
    def __sub__(self, other): return _binary(Sub, self, other)
    def __rsub__(self, other): return _binary(Sub, other, self)
    def __mul__(self, other): return _binary(Mul, self, other)
    def __rmul__(self, other): return _binary(Mul, other, self)
    def __truediv__(self, other): return _binary(Div, self, other)
    def __rtruediv__(self, other): return _binary(Div, other, self)
    def __floordiv__(self, other): return _binary(FloorDiv, self, other)
    def __rfloordiv__(self, other): return _binary(FloorDiv, other, self)
    def __mod__(self, other): return _binary(FloorMod, self, other)
    def __rmod__(self, other): return _binary(FloorMod, other, self)
    def __neg__(self): return _binary(Sub, const(0, self.dtype), self)

    # comparisons and logic ------------------------------------------------------------------
    def __lt__(self, other): return _binary(LT, self, other)
    def __le__(self, other): return _binary(LE, self, other)
    def __gt__(self, other): return _binary(GT, self, other)
    def __ge__(self, other): return _binary(GE, self, other)
    def __eq__(self, other): return _binary(EQ, self, other)  # type: ignore[override]
    def __ne__(self, other): return _binary(NE, self, other)  # type: ignore[override]
    def __and__(self, other): return _binary(And, self, other)
    def __rand__(self, other): return _binary(And, other, self)
    def __or__(self, other): return _binary(Or, self, other)
    def __ror__(self, other): return _binary(Or, other, self)
    def __invert__(self): return Not(self)

    __hash__ = Node.__hash__

    def __bool__(self) -> bool:
        raise ExprError(
            f"symbolic expression {self} cannot be used as a Python bool: "
            "use te.if_then_else, te.all or te.any instead"
        )

    def astype(self, dtype: str) -> Expr:
        """Return this expression cast to ``dtype``."""
        return cast(dtype, self)

    def equal(self, other: ExprLike) -> bool:
        """True when ``other`` is the same node or an equal constant."""
        other = convert(other)
        if self is other:
            return True
        return isinstance(self, ConstExpr) and isinstance(other, ConstExpr) and self.value == other.value


class ConstExpr(Expr):
    """Base of constants (IntImm, FloatImm)."""

    __slots__ = ("value",)

    def __bool__(self) -> bool:
        return bool(self.value)

    def __int__(self) -> int:
        return int(self.value)

    def __float__(self) -> float:
        return float(self.value)

    def __index__(self) -> int:
        if not isinstance(self, IntImm):
            raise ExprError(f"{self} is not an integer")
        return int(self.value)


class IntImm(ConstExpr):
    """An integer (or bool) constant: ``IntImm(5)``, ``IntImm(5, "int64")``.

    TVM's argument order ``IntImm("int64", 5)`` (``tvm.tir.IntImm``) is accepted too.
    """

    __slots__ = ()

    def __init__(self, value: int, dtype: str = "int32"):
        if isinstance(value, str) and not isinstance(dtype, str):
            value, dtype = dtype, value
        set_fields(self, value=int(value), dtype=dtype)


class FloatImm(ConstExpr):
    """A floating-point constant: ``FloatImm(0.5)``; TVM's order ``FloatImm("float32", 0.5)`` too."""

    __slots__ = ()

    def __init__(self, value: float, dtype: str = "float32"):
        if isinstance(value, str) and not isinstance(dtype, str):
            value, dtype = dtype, value
        set_fields(self, value=float(value), dtype=dtype)


class StringImm(Expr):
    """A string constant (only as an argument of calls)."""

    __slots__ = ("value",)

    def __init__(self, value: str):
        set_fields(self, value=value, dtype="handle")


class Var(Expr):
    """A symbolic scalar variable (loop variables, let-bound values)."""

    __slots__ = ("name",)

    def __init__(self, name: str = "v", dtype: str = "int32"):
        set_fields(self, name=name, dtype=dtype)


class BinaryOp(Expr):
    """Base of two-operand nodes; ``a`` and ``b`` have the same dtype."""

    __slots__ = ("a", "b")
    _fields = ("a", "b")
    symbol = "?"

    def __init__(self, a: Expr, b: Expr):
        set_fields(self, a=a, b=b, dtype=self._result_dtype(a.dtype))

    @staticmethod
    def _result_dtype(operand_dtype: str) -> str:
        return operand_dtype


class Add(BinaryOp): __slots__ = (); symbol = "+"
class Sub(BinaryOp): __slots__ = (); symbol = "-"
class Mul(BinaryOp): __slots__ = (); symbol = "*"
class Div(BinaryOp):
    """Division: true division for floats, truncating division for integers."""
    __slots__ = (); symbol = "/"
class FloorDiv(BinaryOp): __slots__ = (); symbol = "//"
class FloorMod(BinaryOp): __slots__ = (); symbol = "%"
class Min(BinaryOp): __slots__ = (); symbol = "min"
class Max(BinaryOp): __slots__ = (); symbol = "max"


class CmpOp(BinaryOp):
    """Base of comparisons; the result is bool with the operands' lanes."""

    __slots__ = ()

    @staticmethod
    def _result_dtype(operand_dtype: str) -> str:
        lanes = lanes_of(operand_dtype)
        return "bool" if lanes == 1 else f"boolx{lanes}"


class EQ(CmpOp):
    __slots__ = (); symbol = "=="

    def __bool__(self) -> bool:
        return self.a is self.b or self.a.equal(self.b)


class NE(CmpOp):
    __slots__ = (); symbol = "!="

    def __bool__(self) -> bool:
        return not (self.a is self.b or self.a.equal(self.b))


class LT(CmpOp): __slots__ = (); symbol = "<"
class LE(CmpOp): __slots__ = (); symbol = "<="
class GT(CmpOp): __slots__ = (); symbol = ">"
class GE(CmpOp): __slots__ = (); symbol = ">="
class And(CmpOp): __slots__ = (); symbol = "&&"
class Or(CmpOp): __slots__ = (); symbol = "||"


class Not(Expr):
    """Logical negation of a bool expression."""

    __slots__ = ("a",)
    _fields = ("a",)

    def __init__(self, a: Expr):
        set_fields(self, a=a, dtype=a.dtype)


class Cast(Expr):
    """Conversion of ``value`` to ``dtype``."""

    __slots__ = ("value",)
    _fields = ("value",)

    def __init__(self, dtype: str, value: Expr):
        parse_dtype(dtype)
        set_fields(self, value=value, dtype=dtype)


class Select(Expr):
    """``condition ? true_value : false_value``, lazy: the branch not taken is not evaluated.

    This is what ``te.if_then_else`` builds, so a guarded out-of-bounds read (padding) is safe.
    """

    __slots__ = ("condition", "true_value", "false_value")
    _fields = ("condition", "true_value", "false_value")

    def __init__(self, condition: Expr, true_value: Expr, false_value: Expr):
        if not (isinstance(condition, Expr) and isinstance(true_value, Expr)
                and isinstance(false_value, Expr)):  # user code (tir.Select) may pass numbers
            condition, true_value, false_value = _select_operands(condition, true_value, false_value)
        if true_value.dtype != false_value.dtype:
            raise ExprError(f"Select: the branches have different dtypes ({true_value.dtype} and "
                            f"{false_value.dtype})")
        set_fields(self, condition=condition, true_value=true_value, false_value=false_value,
              dtype=true_value.dtype)


def _select_operands(condition: ExprLike, t: ExprLike, f: ExprLike) -> tuple[Expr, Expr, Expr]:
    """Convert Select's operands: a number takes the dtype of the other branch's expression."""
    c = convert(condition)
    if not isinstance(t, Expr) and isinstance(f, Expr):
        tv, fv = convert(t, f.dtype if _is_number(t) else None), f
    elif isinstance(t, Expr) and not isinstance(f, Expr):
        tv, fv = t, convert(f, t.dtype if _is_number(f) else None)
    else:
        tv, fv = convert(t), convert(f)
    return c, tv, fv


def _is_number(x: object) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


class Call(Expr):
    """A call of a pure intrinsic by name: exp, log, sqrt, tanh, fabs, pow, sigmoid, fma, ..."""

    __slots__ = ("name", "args")
    _fields = ("args",)

    def __init__(self, dtype: str, name: str, args: tuple[Expr, ...] | list[Expr]):
        set_fields(self, name=name, args=tuple(args), dtype=dtype)


class Ramp(Expr):
    """The vector ``[base, base + stride, ..., base + (lanes-1)*stride]``."""

    __slots__ = ("base", "stride", "lanes")
    _fields = ("base", "stride")

    def __init__(self, base: Expr, stride: Expr, lanes: int):
        set_fields(self, base=base, stride=stride, lanes=int(lanes),
              dtype=f"{element_of(base.dtype)}x{int(lanes)}")


class Broadcast(Expr):
    """A vector with ``value`` in each of ``lanes`` lanes."""

    __slots__ = ("value", "lanes")
    _fields = ("value",)

    def __init__(self, value: Expr, lanes: int):
        set_fields(self, value=value, lanes=int(lanes), dtype=f"{element_of(value.dtype)}x{int(lanes)}")


class BufferLoad(Expr):
    """Read of ``buffer`` at ``indices``; after lowering there is one (flat) index, maybe a Ramp."""

    __slots__ = ("buffer", "indices")
    _fields = ("indices",)

    def __init__(self, buffer: Buffer, indices: tuple[ExprLike, ...] | list[ExprLike]):
        indices = tuple(convert(i) for i in indices)
        lanes = max((lanes_of(i.dtype) for i in indices), default=1)
        dtype = buffer.dtype if lanes == 1 else f"{element_of(buffer.dtype)}x{lanes}"
        set_fields(self, buffer=buffer, indices=indices, dtype=dtype)


class Let(Expr):
    """``body`` with ``var`` bound to ``value``."""

    __slots__ = ("var", "value", "body")
    _fields = ("value", "body")

    def __init__(self, var: Var, value: Expr, body: Expr):
        set_fields(self, var=var, value=value, body=body, dtype=body.dtype)


# construction helpers ---------------------------------------------------------------------------

def const(value: int | float | bool, dtype: str | None = None) -> ConstExpr:
    """A constant of ``dtype`` (default: int32 for ints and bools, float32 for floats)."""
    if dtype is None:
        dtype = "float32" if isinstance(value, float) else "int32"
    t = parse_dtype(dtype)
    if t.lanes != 1:
        raise ExprError(f"constants are scalar, got dtype {dtype}")
    if t.is_float:
        return FloatImm(value, dtype)
    if isinstance(value, float) and not value.is_integer():
        raise ExprError(f"cannot make an {dtype} constant from {value}")
    if t.is_bool:
        return IntImm(int(bool(value)), dtype)
    return IntImm(int(value), dtype)


def convert(value: ExprLike, dtype: str | None = None) -> Expr:
    """Turn a Python number (or an expression) into an expression."""
    if isinstance(value, Expr):
        return value
    if isinstance(value, bool):
        return IntImm(int(value), "bool")
    if isinstance(value, (int, float)):
        return const(value, dtype)
    if hasattr(value, "__index__") and not isinstance(value, str):  # numpy integers
        return const(int(value), dtype)
    if hasattr(value, "dtype") and hasattr(value, "item"):  # numpy scalars
        return const(value.item(), dtype)
    as_expr = getattr(value, "as_expr", None)
    if callable(as_expr):  # IterVar, single-element tensors
        return as_expr()
    raise ExprError(f"cannot use {value!r} ({type(value).__name__}) in an expression")


def cast(dtype: str, value: ExprLike) -> Expr:
    """``value`` converted to ``dtype`` (a no-op when it already has that dtype)."""
    value = convert(value)
    lanes = lanes_of(value.dtype)
    target = parse_dtype(dtype)
    if lanes > 1 and target.lanes == 1:
        dtype = target.with_lanes(lanes)
    if value.dtype == dtype:
        return value
    if isinstance(value, ConstExpr) and lanes == 1:
        py = value.value
        if parse_dtype(dtype).is_float:
            return FloatImm(float(py), dtype)
        if dtype == "bool":
            return IntImm(int(bool(py)), "bool")
        if isinstance(py, float) and not math.isfinite(py):
            return Cast(dtype, value)
        return IntImm(int(py), dtype)
    return Cast(dtype, value)


def _binary(cls: type[BinaryOp], a: ExprLike, b: ExprLike) -> Expr:
    if not isinstance(a, Expr) and not isinstance(b, Expr):
        a, b = convert(a), convert(b)
    elif not isinstance(a, Expr):
        a = convert(a, _const_dtype_for(a, b.dtype))
    elif not isinstance(b, Expr):
        b = convert(b, _const_dtype_for(b, a.dtype))
    if a.dtype != b.dtype:
        common = promote(a.dtype, b.dtype)
        a, b = cast(common, a), cast(common, b)
    if issubclass(cls, (And, Or)) and element_of(a.dtype) != "bool":
        raise ExprError(f"{cls.symbol} needs bool operands, got {a.dtype}")
    return cls(a, b)


def _const_dtype_for(value: ExprLike, other_dtype: str) -> str:
    other = element_of(other_dtype)
    if isinstance(value, float) and not parse_dtype(other).is_float:
        return "float32"
    if isinstance(value, bool) and other != "bool":
        return other
    return other


def min_value(dtype: str) -> ConstExpr:
    """The smallest value of a scalar dtype (-inf for floats)."""
    return const(min_of(dtype), dtype)


def max_value(dtype: str) -> ConstExpr:
    """The largest value of a scalar dtype (+inf for floats)."""
    return const(max_of(dtype), dtype)
