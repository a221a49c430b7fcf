"""numpy's broadcasting for tensor expressions: the broadcast of two shapes, a tensor read at an
output index, and the elementwise combination of tensors and scalars (what ``a + b`` of two te
tensors builds, TVM's ``topi.add`` ...).

Extents may be symbolic (``te.var``): two extents agree when they are the same expression, or
one of them is 1.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from tunecli.engine.ir import expr as E
from tunecli.engine.ir.simplify import skey
from tunecli.errors import ExprError

from .compute import compute
from .tensor import Tensor

Extent = int | E.Expr


def _same(x: Extent, y: Extent) -> bool:
    if isinstance(x, int) and isinstance(y, int):
        return x == y
    return not isinstance(x, int) and not isinstance(y, int) and skey(x) == skey(y)


def broadcast_shape(lhs: Sequence[Extent], rhs: Sequence[Extent]) -> tuple[Extent, ...]:
    """numpy's broadcast of two shapes (ExprError when they do not broadcast)."""
    n = max(len(lhs), len(rhs))
    a = (1,) * (n - len(lhs)) + tuple(lhs)
    b = (1,) * (n - len(rhs)) + tuple(rhs)
    out: list[Extent] = []
    for x, y in zip(a, b, strict=True):
        if _same(x, y) or (isinstance(y, int) and y == 1):
            out.append(x)
        elif isinstance(x, int) and x == 1:
            out.append(y)
        else:
            raise ExprError(f"shapes {tuple(lhs)} and {tuple(rhs)} do not broadcast")
    return tuple(out)


def broadcast_read(t: Tensor | E.ExprLike, out_shape: Sequence[Extent], idx: Sequence[E.Expr]) -> E.Expr:
    """``t`` read at output index ``idx`` of ``out_shape`` (axes of extent 1 at 0); a scalar as itself."""
    if not isinstance(t, Tensor):
        return E.convert(t)
    skip = len(out_shape) - len(t.shape)
    return t(*[idx[skip + d] if not (isinstance(t.shape[d], int) and t.shape[d] == 1) else 0
               for d in range(len(t.shape))])


def broadcast_binary(fn: Callable[[E.Expr, E.Expr], E.Expr], lhs: Tensor | E.ExprLike,
                     rhs: Tensor | E.ExprLike, name: str) -> Tensor | E.Expr:
    """``fn`` of ``lhs`` and ``rhs`` at every point of their broadcast shape (tag ``broadcast``); two
    scalars give the expression itself."""
    if not isinstance(lhs, Tensor) and not isinstance(rhs, Tensor):
        return fn(E.convert(lhs), E.convert(rhs))
    dtype = (lhs if isinstance(lhs, Tensor) else rhs).dtype
    lhs = lhs if isinstance(lhs, Tensor) else _typed(lhs, dtype)
    rhs = rhs if isinstance(rhs, Tensor) else _typed(rhs, dtype)
    try:
        shape = broadcast_shape(lhs.shape if isinstance(lhs, Tensor) else (),
                                rhs.shape if isinstance(rhs, Tensor) else ())
    except ExprError as err:
        raise ExprError(f"{name}: {err}") from None
    return compute(shape, lambda *i: fn(broadcast_read(lhs, shape, i), broadcast_read(rhs, shape, i)),
                   name=f"T_{name}", tag="broadcast")


def _typed(value: E.ExprLike, dtype: str) -> E.Expr:
    """A Python number in the tensor's dtype (as TVM's ``topi`` takes a scalar operand)."""
    return E.const(value, dtype) if isinstance(value, (int, float)) else E.convert(value)


__all__ = ["broadcast_binary", "broadcast_read", "broadcast_shape"]
