"""A reduction of a tensor over some of its axes (TVM's ``topi.sum`` / ``max`` / ``min`` /
``mean``): one stage reducing the given axes, the others kept (as 1 when ``keepdims``); ``mean``
divides the sum by the count in a second, elementwise stage.  Extents may be symbolic."""

from __future__ import annotations

import math
from collections.abc import Sequence

from tunecli.engine.ir import expr as E
from tunecli.errors import ExprError

from .compute import compute
from .reduction import max as max_reducer
from .reduction import min as min_reducer
from .reduction import reduce_axis
from .reduction import sum as sum_reducer
from .tensor import Tensor

_REDUCERS = {"sum": sum_reducer, "mean": sum_reducer, "max": max_reducer, "min": min_reducer}


def reduced_axes(ndim: int, axis: int | Sequence[int] | None, exclude: bool = False) -> list[int]:
    """The axes a reduction over ``axis`` (all when None; the others when ``exclude``) covers."""
    given = list(range(ndim)) if axis is None else [axis] if isinstance(axis, int) else list(axis)
    axes = []
    for a in given:
        if not -ndim <= a < ndim:
            raise ExprError(f"reduction: axis {a} out of range for {ndim} dimensions")
        axes.append(a % ndim)
    return [a for a in range(ndim) if a not in axes] if exclude else list(dict.fromkeys(axes))


def reduce_axes(x: Tensor, kind: str, axis: int | Sequence[int] | None = None, keepdims: bool = False,
                exclude: bool = False, name: str | None = None) -> Tensor:
    """``kind`` (``sum``, ``mean``, ``max``, ``min``) of ``x`` over ``axis``."""
    if kind not in _REDUCERS:
        raise ExprError(f"reduction: unknown kind {kind!r}; one of {sorted(_REDUCERS)}")
    ndim = len(x.shape)
    axes = reduced_axes(ndim, axis, exclude)
    if not axes:  # nothing to reduce: the data itself
        return compute(x.shape, lambda *i: x(*i), name=name or f"T_{kind}", tag="elemwise")
    raxes = {a: reduce_axis((0, x.shape[a]), name=f"k{a}") for a in axes}
    out_shape = [1 if a in raxes else x.shape[a] for a in range(ndim) if keepdims or a not in raxes]

    def body(*i: E.Expr) -> E.Expr:
        it = iter(i)
        coords = []
        for a in range(ndim):
            if a in raxes:
                coords.append(raxes[a])
                if keepdims:
                    next(it)
            else:
                coords.append(next(it))
        return _REDUCERS[kind](x(*coords), axis=list(raxes.values()))

    total = compute(out_shape, body, name=name or f"T_{kind}", tag=f"comm_reduce_{kind}")
    if kind != "mean":
        return total
    count = math.prod(x.shape[a] for a in axes)
    scale = E.const(count, x.dtype) if isinstance(count, int) else E.cast(x.dtype, count)
    return compute(out_shape, lambda *i: total(*i) / scale, name="T_mean", tag="elemwise")


__all__ = ["reduce_axes", "reduced_axes"]
