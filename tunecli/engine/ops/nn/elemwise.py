"""Elementwise operators: ``relu``, broadcasting ``add`` and ``bias_add`` (``broadcast_shape`` is
``te.broadcasting``'s, the rule of the network operators' type relations too)."""

from __future__ import annotations

from tunecli.engine import te
from tunecli.engine.ir import expr as E
from tunecli.engine.te.broadcasting import broadcast_binary, broadcast_shape  # noqa: F401 - re-exported
from tunecli.errors import ExprError


def relu(x: te.Tensor) -> te.Tensor:
    """``max(x, 0)`` elementwise."""
    return te.compute(x.shape, lambda *i: te.max(x(*i), E.const(0, x.dtype)), name="T_relu", tag="elemwise")


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
    return broadcast_binary(lambda a, b: a + b, lhs, rhs, "add")


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
