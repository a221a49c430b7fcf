"""Operators that read parts of a tensor: take (gather along an axis by run-time indices, the
embedding lookup), strided_slice and split (pattern INJECTIVE)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..graph_expr import Call, Expr, Tuple
from ..op_registry import Attrs, OpPattern, expect, tensor_arg
from ..type_infer import infer_types
from ..types import TensorType, Type
from .define import IntOrInts, int_tuple, make_call, normalize_axis, register_op

#: How ``take`` treats an index outside ``[0, size)``: clamp it, or wrap it around (so ``-1`` is the
#: last element, as ONNX's Gather reads negative indices).
TAKE_MODES = ("clip", "wrap")


@dataclass(frozen=True)
class TakeAttrs(Attrs):
    """``take``: the gathered axis (None: the flattened data) and the index mode."""

    axis: int | None = None
    mode: str = "clip"


@dataclass(frozen=True)
class StridedSliceAttrs(Attrs):
    """``strided_slice``: Python slice bounds per axis (``axes``: the sliced axes, None: the first
    ``len(begin)`` axes)."""

    begin: tuple[int, ...] = ()
    end: tuple[int, ...] = ()
    strides: tuple[int, ...] = ()
    axes: tuple[int, ...] | None = None


def _take_relation(op_name: str, arg_types: Sequence[Type | None], attrs: TakeAttrs) -> Type:
    data = tensor_arg(op_name, arg_types, 0, "data")
    indices = tensor_arg(op_name, arg_types, 1, "indices")
    integer = indices.dtype.startswith(("int", "uint"))
    expect(integer, op_name, f"indices must be integers, got {indices.dtype}")
    expect(attrs.mode in TAKE_MODES, op_name, f"mode {attrs.mode!r}; supported: {', '.join(TAKE_MODES)}")
    if attrs.axis is None:
        return TensorType(indices.shape, data.dtype)
    axis = normalize_axis(op_name, attrs.axis, data.ndim)
    return TensorType(data.shape[:axis] + indices.shape + data.shape[axis + 1 :], data.dtype)


def _take(attrs: TakeAttrs, data: np.ndarray, indices: np.ndarray) -> np.ndarray:
    source = data.reshape(-1) if attrs.axis is None else data
    axis = 0 if attrs.axis is None else attrs.axis % data.ndim
    return np.take(source, indices.astype(np.int64), axis=axis, mode=attrs.mode)


def slice_ranges(op_name: str, shape: tuple[int, ...], attrs: StridedSliceAttrs) -> list[range]:
    """Per axis of ``shape``, the indices a strided slice reads (Python's slice rules)."""
    n = len(attrs.begin)
    axes = tuple(range(n)) if attrs.axes is None else attrs.axes
    strides = attrs.strides or (1,) * n
    expect(
        len(attrs.end) == n and len(strides) == n and len(axes) == n,
        op_name,
        f"begin {attrs.begin}, end {attrs.end}, strides {strides} and axes {axes} differ in length",
    )
    expect(0 not in strides, op_name, f"strides {strides} contain 0")
    ranges = [range(s) for s in shape]
    for b, e, s, a in zip(attrs.begin, attrs.end, strides, axes, strict=True):
        axis = normalize_axis(op_name, a, len(shape))
        ranges[axis] = range(*slice(b, e, s).indices(shape[axis]))
    return ranges


def _strided_slice_relation(op_name: str, arg_types: Sequence[Type | None], attrs: StridedSliceAttrs) -> Type:
    data = tensor_arg(op_name, arg_types, 0, "data")
    shape = tuple(len(r) for r in slice_ranges(op_name, data.shape, attrs))
    expect(all(shape), op_name, f"the slice of {data.shape} is empty ({shape})")
    return TensorType(shape, data.dtype)


def _strided_slice(attrs: StridedSliceAttrs, x: np.ndarray) -> np.ndarray:
    ranges = slice_ranges("strided_slice", x.shape, attrs)
    return np.ascontiguousarray(x[np.ix_(*[np.asarray(r, dtype=np.int64) for r in ranges])])


register_op("take", ("data", "indices"), _take_relation, _take, OpPattern.INJECTIVE, TakeAttrs)
register_op(
    "strided_slice",
    ("data",),
    _strided_slice_relation,
    _strided_slice,
    OpPattern.INJECTIVE,
    StridedSliceAttrs,
)


def take(data: Expr, indices: Expr, axis: int | None = None, mode: str = "clip") -> Call:
    """The elements of ``data`` at ``indices`` along ``axis`` (``relay.take``; None: of the
    flattened data); out-of-range indices are clamped (``"clip"``) or wrapped (``"wrap"``)."""
    return make_call("take", [data, indices], TakeAttrs(None if axis is None else int(axis), str(mode)))


def strided_slice(
    data: Expr,
    begin: Sequence[int],
    end: Sequence[int],
    strides: Sequence[int] | None = None,
    axes: Sequence[int] | None = None,
) -> Call:
    """``data[begin:end:strides]`` on ``axes`` (``relay.strided_slice``; bounds as Python slices)."""
    attrs = StridedSliceAttrs(
        int_tuple(begin, None, "begin"),
        int_tuple(end, None, "end"),
        int_tuple(strides, None, "strides") if strides is not None else (),
        int_tuple(axes, None, "axes") if axes is not None else None,
    )
    return make_call("strided_slice", [data], attrs)


def split(data: Expr, indices_or_sections: IntOrInts, axis: int = 0) -> Tuple:
    """``data`` cut along ``axis`` (``relay.split``): into that many equal parts for an int, else at
    the given indices; a Tuple of strided slices, one per part."""
    ndim = len(_shape_of(data))
    size = _shape_of(data)[normalize_axis("split", axis, ndim)]
    if isinstance(indices_or_sections, (int, np.integer)):
        sections = int(indices_or_sections)
        expect(sections > 0 and size % sections == 0, "split", f"{sections} sections do not divide {size}")
        cuts = [size // sections * i for i in range(1, sections)]
    else:
        cuts = [int(i) for i in indices_or_sections]
    bounds = [0, *cuts, size]
    parts = []
    for begin, end in zip(bounds[:-1], bounds[1:], strict=True):
        expect(0 <= begin < end <= size, "split", f"indices {cuts} do not cut axis of size {size} into parts")
        parts.append(strided_slice(data, (begin,), (end,), (1,), (axis,)))
    return Tuple(parts)


def _shape_of(data: Expr) -> tuple[int, ...]:
    t = data.checked_type if data.has_type else infer_types(data)
    expect(isinstance(t, TensorType), "split", f"data must be a tensor, got {t}")
    return t.shape  # type: ignore[union-attr]
