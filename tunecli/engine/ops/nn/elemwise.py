"""Elementwise operators: ``relu``, broadcasting ``add`` and ``bias_add``."""

from __future__ import annotations

from tunecli.engine import te
from tunecli.engine.ir import expr as E
from tunecli.errors import ExprError


def relu(x: te.Tensor) -> te.Tensor:
    """``max(x, 0)`` elementwise."""
    return te.compute(x.shape, lambda *i: te.max(x(*i), E.const(0, x.dtype)), name="T_relu", tag="elemwise")


def broadcast_shape(lhs: tuple[int, ...], rhs: tuple[int, ...]) -> tuple[int, ...]:
    """numpy's broadcast of two shapes (raises ExprError when they do not broadcast): the rule of the
    broadcasting kernels here and of the network operators' type relations (``graph.ops``)."""
    n = max(len(lhs), len(rhs))
    a = (1,) * (n - len(lhs)) + tuple(lhs)
    b = (1,) * (n - len(rhs)) + tuple(rhs)
    out = []
    for x, y in zip(a, b, strict=True):
        if x != y and 1 not in (x, y):
            raise ExprError(f"shapes {tuple(lhs)} and {tuple(rhs)} do not broadcast")
        out.append(max(x, y))
    return tuple(out)


def _read(t: te.Tensor | E.ExprLike, out_shape: tuple[int, ...], idx: tuple[E.Expr, ...]) -> E.Expr:
    if not isinstance(t, te.Tensor):
        return E.convert(t)
    skip = len(out_shape) - len(t.shape)
    return t(*[idx[skip + d] if t.shape[d] != 1 else 0 for d in range(len(t.shape))])


def add(lhs: te.Tensor | E.ExprLike, rhs: te.Tensor | E.ExprLike) -> te.Tensor | E.Expr:
    """``lhs + rhs`` with numpy broadcasting; either side may be a scalar.

    Parameters
    ----------
    lhs, rhs : te.Tensor or number or Expr

    Returns
    -------
    te.Tensor
        The broadcast sum (an expression when both sides are scalars).
    """
    if not isinstance(lhs, te.Tensor) and not isinstance(rhs, te.Tensor):
        return E.convert(lhs) + E.convert(rhs)
    lshape = lhs.shape if isinstance(lhs, te.Tensor) else ()
    rshape = rhs.shape if isinstance(rhs, te.Tensor) else ()
    shape = broadcast_shape(lshape, rshape)
    return te.compute(shape, lambda *i: _read(lhs, shape, i) + _read(rhs, shape, i), name="T_add",
                      tag="broadcast")


def bias_add(data: te.Tensor, bias: te.Tensor, axis: int = 1) -> te.Tensor:
    """Add a 1-D ``bias`` along ``axis`` of ``data`` (relay's ``nn.bias_add``).

    Parameters
    ----------
    data : te.Tensor
        n-D tensor.
    bias : te.Tensor
        ``[data.shape[axis]]``.
    axis : int
        The channel axis (negative counts from the end).

    Returns
    -------
    te.Tensor
        Same shape and dtype as ``data``.
    """
    ndim = len(data.shape)
    ax = axis + ndim if axis < 0 else axis
    if not 0 <= ax < ndim:
        raise ExprError(f"bias_add: axis {axis} out of range for a {ndim}-D tensor")
    if tuple(bias.shape) != (data.shape[ax],):
        raise ExprError(f"bias_add: bias must have shape ({data.shape[ax]},), got {bias.shape}")
    return te.compute(data.shape, lambda *i: data(*i) + bias[i[ax]].astype(data.dtype), name="T_bias_add",
                      tag="broadcast")
