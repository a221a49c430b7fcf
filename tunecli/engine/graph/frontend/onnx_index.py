"""ONNX operators that select, cut or repeat parts of tensors: Gather (run-time indices: the
embedding lookup), GatherND and GatherElements (indices known at import: a ``take`` of the
flattened data), Slice, Split, Expand, Tile, Trilu and Range.

Indices, bounds, shapes and repetitions must be known at import (Gather's indices excepted);
each operator folds with numpy when every input is.
"""

from __future__ import annotations

import math

import numpy as np

from tunecli.errors import GraphError

from ..graph_expr import const
from ..ops.define import broadcast_shape
from ..ops.replicate import arange, broadcast_to, tile
from ..ops.selection import trilu
from ..ops.slicing import strided_slice, take
from ..ops.transform import reshape
from .onnx_node import NodeContext
from .onnx_table import Outputs, Value, converter

# --- Gather -----------------------------------------------------------------------------------------


def _gather_axis(ctx: NodeContext) -> int:
    return ctx.axis(ctx.attr("axis", 0), len(ctx.shape(0)))


def _known_indices(ctx: NodeContext, axis: int) -> np.ndarray:
    """The indices (known at import) with negative ones counted from the end, checked in range."""
    indices = np.asarray(ctx.array(1, "indices")).astype("int64")
    size = ctx.shape(0)[axis]
    if np.any((indices < -size) | (indices >= size)):
        raise ctx.error(f"indices {indices.tolist()} out of range for axis {axis} of size {size}")
    return np.where(indices < 0, indices + size, indices)


def _fold_gather(ctx: NodeContext) -> Value:
    axis = _gather_axis(ctx)
    return np.take(ctx.array(0, "data"), _known_indices(ctx, axis), axis=axis)


@converter("Gather", fold=_fold_gather)
def _gather(ctx: NodeContext) -> Value:
    axis = _gather_axis(ctx)
    shape = ctx.shape(0)
    if ctx.store.known(ctx.inputs[1]):
        indices = _known_indices(ctx, axis)
        if indices.ndim == 0:  # x[:, i]: a slice without its axis
            i = int(indices)
            part = strided_slice(ctx.expr(0), (i,), (i + 1,), (1,), (axis,))
            return reshape(part, shape[:axis] + shape[axis + 1 :])
        return take(ctx.expr(0), const(indices.astype("int32")), axis=axis, mode="wrap")
    # Run-time indices (token ids): ONNX allows [-size, size), which wrapping reads exactly.
    return take(ctx.expr(0), ctx.expr(1), axis=axis, mode="wrap")


def _flat_gather(ctx: NodeContext, lead: int, flat: np.ndarray) -> Value:
    """``data`` with its first ``lead`` axes flattened, gathered at ``flat`` (an array known at import)
    along that axis; folded when ``data`` is known."""
    shape = ctx.shape(0)
    rows = (int(np.prod(shape[:lead], dtype=np.int64)), *shape[lead:])
    if ctx.store.foldable(ctx.inputs[0]):
        return np.take(ctx.array(0, "data").reshape(rows), flat, axis=0)
    return take(reshape(ctx.expr(0), rows), const(flat.astype("int32")), axis=0)


def _gather_nd(ctx: NodeContext) -> Value:
    shape = ctx.shape(0)
    batch_dims = int(ctx.attr("batch_dims", 0))
    indices = np.asarray(ctx.array(1, "indices")).astype("int64")
    k = indices.shape[-1] if indices.ndim else 0
    fits = indices.ndim > batch_dims and 1 <= k <= len(shape) - batch_dims
    if not fits or indices.shape[:batch_dims] != shape[:batch_dims]:
        raise ctx.error(
            f"indices of shape {indices.shape} do not index data {shape} with batch_dims {batch_dims}"
        )
    sizes = np.asarray(shape[batch_dims : batch_dims + k], dtype=np.int64)
    if np.any((indices < -sizes) | (indices >= sizes)):
        raise ctx.error(f"indices {indices.tolist()} out of range for data {shape}")
    indices = np.where(indices < 0, indices + sizes, indices)
    batch = np.indices(indices.shape[:-1])[:batch_dims]  # each entry's position on the batch axes
    coords = (*batch, *np.moveaxis(indices, -1, 0))
    return _flat_gather(ctx, batch_dims + k, np.ravel_multi_index(coords, shape[: batch_dims + k]))


converter("GatherND", since=11, fold=_gather_nd)(_gather_nd)


def _gather_elements(ctx: NodeContext) -> Value:
    shape = ctx.shape(0)
    axis = ctx.axis(ctx.attr("axis", 0), len(shape))
    indices = np.asarray(ctx.array(1, "indices")).astype("int64")
    if indices.ndim != len(shape):
        raise ctx.error(f"indices of shape {indices.shape} must have the rank of data {shape}")
    size = shape[axis]
    if np.any((indices < -size) | (indices >= size)):
        raise ctx.error(f"indices {indices.tolist()} out of range for axis {axis} of size {size}")
    coords = list(np.indices(indices.shape))
    coords[axis] = np.where(indices < 0, indices + size, indices)
    if any(c.max(initial=0) >= s for c, s in zip(coords, shape, strict=True)):
        raise ctx.error(f"indices of shape {indices.shape} exceed data {shape} outside axis {axis}")
    return _flat_gather(ctx, len(shape), np.ravel_multi_index(tuple(coords), shape))


converter("GatherElements", since=11, fold=_gather_elements)(_gather_elements)


# --- Slice, Split -----------------------------------------------------------------------------------


def _slice_bounds(ctx: NodeContext) -> tuple[tuple[int, ...], ...]:
    """``(starts, ends, axes, steps)``, axes normalised."""
    ndim = len(ctx.shape(0))
    if ctx.opset < 10:
        starts, ends = ctx.int_list("starts", ()), ctx.int_list("ends", ())
        axes = ctx.int_list("axes", range(len(starts)))
        steps: tuple[int, ...] = (1,) * len(starts)
    else:
        starts, ends = ctx.ints(1, "starts"), ctx.ints(2, "ends")
        axes = ctx.ints(3, "axes") if ctx.has_input(3) else tuple(range(len(starts)))
        steps = ctx.ints(4, "steps") if ctx.has_input(4) else (1,) * len(starts)
    if not len(starts) == len(ends) == len(axes) == len(steps):
        raise ctx.error(f"starts {starts}, ends {ends}, axes {axes} and steps {steps} differ in length")
    if 0 in steps:
        raise ctx.error("a step is 0")
    return starts, ends, tuple(ctx.axis(a, ndim, "axes entry") for a in axes), steps


def _fold_slice(ctx: NodeContext) -> Value:
    data = ctx.array(0, "data")
    index = [slice(None)] * data.ndim
    for start, end, axis, step in zip(*_slice_bounds(ctx), strict=True):
        index[axis] = slice(start, end, step)
    return data[tuple(index)]


@converter("Slice", fold=_fold_slice)
def _slice(ctx: NodeContext) -> Value:
    starts, ends, axes, steps = _slice_bounds(ctx)
    shape = ctx.shape(0)
    if all(range(*slice(b, e, s).indices(shape[a])) == range(shape[a])
           for b, e, a, s in zip(starts, ends, axes, steps, strict=True)):
        return ctx.expr(0)
    return strided_slice(ctx.expr(0), starts, ends, steps, axes)


def _split_sizes(ctx: NodeContext) -> tuple[int, tuple[int, ...]]:
    """The split axis and the size of every part."""
    shape = ctx.shape(0)
    axis = ctx.axis(ctx.attr("axis", 0), len(shape))
    size = shape[axis]
    if ctx.opset < 13:
        sizes = ctx.int_list("split", ())
    else:
        sizes = ctx.ints(1, "split") if ctx.has_input(1) else ()
    if not sizes:
        parts = int(ctx.attr("num_outputs", ctx.num_outputs))
        if ctx.opset < 18 and size % parts:
            raise ctx.error(f"{parts} outputs do not divide axis {axis} of size {size} equally")
        step = math.ceil(size / parts)
        sizes = tuple(min(step, size - i * step) for i in range(parts))
    if sum(sizes) != size or min(sizes) <= 0:
        raise ctx.error(f"split {sizes} does not cut axis {axis} of size {size} into non-empty parts")
    if len(sizes) != ctx.num_outputs:
        raise ctx.error(f"split gives {len(sizes)} parts for {ctx.num_outputs} outputs")
    return axis, tuple(sizes)


def _fold_split(ctx: NodeContext) -> Outputs:
    axis, sizes = _split_sizes(ctx)
    return tuple(np.split(ctx.array(0, "input"), np.cumsum(sizes)[:-1], axis=axis))


@converter("Split", fold=_fold_split)
def _split(ctx: NodeContext) -> Outputs:
    axis, sizes = _split_sizes(ctx)
    bounds = np.concatenate([[0], np.cumsum(sizes)]).tolist()
    x = ctx.expr(0)
    pairs = zip(bounds[:-1], bounds[1:], strict=True)
    return tuple(strided_slice(x, (b,), (e,), (1,), (axis,)) for b, e in pairs)


# --- Expand, Tile, Trilu, Range ---------------------------------------------------------------------


def _expanded_shape(ctx: NodeContext) -> tuple[int, ...]:
    target = ctx.ints(1, "shape")
    try:
        return broadcast_shape("Expand", ctx.shape(0), target)
    except GraphError:
        raise ctx.error(f"input shape {ctx.shape(0)} does not broadcast with {target}") from None


def _fold_expand(ctx: NodeContext) -> Value:
    return np.broadcast_to(ctx.array(0, "input"), _expanded_shape(ctx)).copy()


@converter("Expand", since=8, fold=_fold_expand)
def _expand(ctx: NodeContext) -> Value:
    shape = _expanded_shape(ctx)
    return ctx.expr(0) if shape == ctx.shape(0) else broadcast_to(ctx.expr(0), shape)


def _repeats(ctx: NodeContext) -> tuple[int, ...]:
    repeats = ctx.ints(1, "repeats")
    if len(repeats) != len(ctx.shape(0)) or min(repeats, default=1) < 1:
        raise ctx.error(f"repeats {repeats}: one positive count per axis of {ctx.shape(0)} expected")
    return repeats


@converter("Tile", fold=lambda ctx: np.tile(ctx.array(0, "input"), _repeats(ctx)))
def _tile(ctx: NodeContext) -> Value:
    return tile(ctx.expr(0), _repeats(ctx))


def _trilu_args(ctx: NodeContext) -> tuple[int, bool]:
    if len(ctx.shape(0)) < 2:
        raise ctx.error(f"the input must have at least 2 dimensions, got {ctx.shape(0)}")
    k = int(ctx.scalar(1, "k")) if ctx.has_input(1) else 0
    return k, bool(ctx.attr("upper", 1))


def _fold_trilu(ctx: NodeContext) -> Value:
    k, upper = _trilu_args(ctx)
    data = ctx.array(0, "input")
    return np.triu(data, k) if upper else np.tril(data, k)


@converter("Trilu", since=14, fold=_fold_trilu)
def _trilu(ctx: NodeContext) -> Value:
    k, upper = _trilu_args(ctx)
    return trilu(ctx.expr(0), k, upper)


def _range_args(ctx: NodeContext) -> tuple[float, float, float, str]:
    values = [ctx.scalar(i, what) for i, what in enumerate(("start", "limit", "delta"))]
    if values[2] == 0:
        raise ctx.error("delta is 0")
    return values[0], values[1], values[2], ctx.tensor_type(0).dtype


def _fold_range(ctx: NodeContext) -> Value:
    start, limit, delta, dtype = _range_args(ctx)
    count = max(math.ceil((limit - start) / delta), 0)
    return (start + np.arange(count, dtype=np.float64) * delta).astype(dtype)


@converter("Range", since=11, fold=_fold_range)
def _range(ctx: NodeContext) -> Value:
    start, limit, delta, dtype = _range_args(ctx)
    if math.ceil((limit - start) / delta) <= 0:
        raise ctx.error(f"start {start}, limit {limit}, delta {delta}: an empty range is not supported")
    return arange(start, limit, delta, dtype=dtype)

