"""Operators that move data without computing: reshape, transpose, concatenate, squeeze,
expand_dims and layout_transform (pattern INJECTIVE)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from tunecli.errors import GraphError

from ..graph_expr import Call, Expr, Tuple
from ..layout import convert_array, convert_shape
from ..op_registry import Attrs, OpPattern, expect, tensor_arg, tuple_arg
from ..types import TensorType, Type
from .define import IntOrInts, int_tuple, make_call, normalize_axis, register_op


@dataclass(frozen=True)
class ReshapeAttrs(Attrs):
    """``reshape``: the new shape with TVM's special values (0, -1, -2, -3, -4)."""

    newshape: tuple[int, ...] = ()
    allowzero: bool = False


@dataclass(frozen=True)
class TransposeAttrs(Attrs):
    """``transpose``: the axis order (None reverses)."""

    axes: tuple[int, ...] | None = None


@dataclass(frozen=True)
class ConcatenateAttrs(Attrs):
    """``concatenate``: the axis."""

    axis: int = 0


@dataclass(frozen=True)
class SqueezeAttrs(Attrs):
    """``squeeze``: the axes to drop (None: every axis of size 1)."""

    axis: tuple[int, ...] | None = None


@dataclass(frozen=True)
class ExpandDimsAttrs(Attrs):
    """``expand_dims``: where, and how many new axes of size 1."""

    axis: int = 0
    num_newaxis: int = 1


@dataclass(frozen=True)
class LayoutTransformAttrs(Attrs):
    """``layout_transform``: source and destination layouts."""

    src_layout: str = "NCHW"
    dst_layout: str = "NCHW"


def infer_reshape(
    op_name: str, shape: tuple[int, ...], newshape: tuple[int, ...], allowzero: bool = False
) -> tuple[int, ...]:
    """The shape ``reshape(shape, newshape)`` gives, with TVM's special values: 0 copies the input
    dimension (a literal 0 with ``allowzero``), -1 infers one dimension, -2 copies the remaining
    ones, -3 merges two, -4 splits one into the two values that follow (one of them may be -1)."""
    out: list[int] = []
    src, i, infer_at = 0, 0, -1
    while i < len(newshape):
        v = newshape[i]
        if v > 0 or (v == 0 and allowzero):
            out.append(v)
            src += 1
        elif v == 0:
            expect(
                src < len(shape), op_name, f"newshape {newshape}: 0 past the input's {len(shape)} dimensions"
            )
            out.append(shape[src])
            src += 1
        elif v == -1:
            expect(infer_at < 0, op_name, f"newshape {newshape} has more than one -1")
            infer_at = len(out)
            out.append(1)
            src += 1
        elif v == -2:
            out.extend(shape[src:])
            src = len(shape)
        elif v == -3:
            expect(src + 1 < len(shape), op_name, f"newshape {newshape}: -3 needs two input dimensions")
            out.append(shape[src] * shape[src + 1])
            src += 2
        elif v == -4:
            expect(i + 2 < len(newshape), op_name, f"newshape {newshape}: -4 needs two values after it")
            a, b = newshape[i + 1], newshape[i + 2]
            total = shape[src]
            a = total // b if a == -1 else a
            b = total // a if b == -1 else b
            expect(a * b == total, op_name, f"newshape {newshape}: -4 splits {total} into {a} x {b}")
            out += [a, b]
            src += 1
            i += 2
        else:
            raise GraphError(f"{op_name}: newshape {newshape}: invalid value {v}")
        i += 1
    size = int(np.prod(shape, dtype=np.int64))
    known = int(np.prod(out, dtype=np.int64))
    if infer_at >= 0:
        expect(known > 0 and size % known == 0, op_name, f"cannot reshape {shape} into {newshape}")
        out[infer_at] = size // known
    expect(
        int(np.prod(out, dtype=np.int64)) == size,
        op_name,
        f"cannot reshape {shape} ({size} elements) into {tuple(out)}",
    )
    return tuple(out)


def _reshape_relation(op_name: str, arg_types: Sequence[Type | None], attrs: ReshapeAttrs) -> Type:
    data = tensor_arg(op_name, arg_types, 0, "data")
    return TensorType(infer_reshape(op_name, data.shape, attrs.newshape, attrs.allowzero), data.dtype)


def _reshape(attrs: ReshapeAttrs, x: np.ndarray) -> np.ndarray:
    return x.reshape(infer_reshape("reshape", x.shape, attrs.newshape, attrs.allowzero))


def _axes(op_name: str, attrs: TransposeAttrs, ndim: int) -> tuple[int, ...]:
    if attrs.axes is None:
        return tuple(reversed(range(ndim)))
    axes = tuple(normalize_axis(op_name, a, ndim) for a in attrs.axes)
    expect(
        sorted(axes) == list(range(ndim)), op_name, f"axes {attrs.axes} are not a permutation of {ndim} axes"
    )
    return axes


def _transpose_relation(op_name: str, arg_types: Sequence[Type | None], attrs: TransposeAttrs) -> Type:
    data = tensor_arg(op_name, arg_types, 0, "data")
    return TensorType(tuple(data.shape[a] for a in _axes(op_name, attrs, data.ndim)), data.dtype)


def _transpose(attrs: TransposeAttrs, x: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(x.transpose(_axes("transpose", attrs, x.ndim)))


def _concatenate_relation(op_name: str, arg_types: Sequence[Type | None], attrs: ConcatenateAttrs) -> Type:
    fields = tuple_arg(op_name, arg_types, 0, "data").fields
    expect(len(fields) > 0, op_name, "needs at least one tensor")
    first = fields[0]
    expect(all(isinstance(f, TensorType) for f in fields), op_name, "every field must be a tensor")
    axis = normalize_axis(op_name, attrs.axis, first.ndim)
    for i, f in enumerate(fields):
        expect(f.dtype == first.dtype, op_name, f"field {i} has dtype {f.dtype}, field 0 has {first.dtype}")
        same = f.ndim == first.ndim and all(
            a == b for d, (a, b) in enumerate(zip(f.shape, first.shape, strict=False)) if d != axis
        )
        expect(
            same, op_name, f"field {i} {f.shape} differs from field 0 {first.shape} outside axis {attrs.axis}"
        )
    shape = list(first.shape)
    shape[axis] = sum(f.shape[axis] for f in fields)  # type: ignore[union-attr]
    return TensorType(tuple(shape), first.dtype)


def _concatenate(attrs: ConcatenateAttrs, fields: tuple[np.ndarray, ...]) -> np.ndarray:
    return np.concatenate(fields, axis=attrs.axis)


def _squeeze_axes(op_name: str, shape: tuple[int, ...], attrs: SqueezeAttrs) -> tuple[int, ...]:
    if attrs.axis is None:
        return tuple(i for i, s in enumerate(shape) if s == 1)
    axes = tuple(normalize_axis(op_name, a, len(shape)) for a in attrs.axis)
    for a in axes:
        expect(shape[a] == 1, op_name, f"axis {a} of {shape} has size {shape[a]}, not 1")
    return axes


def _squeeze_relation(op_name: str, arg_types: Sequence[Type | None], attrs: SqueezeAttrs) -> Type:
    data = tensor_arg(op_name, arg_types, 0, "data")
    drop = _squeeze_axes(op_name, data.shape, attrs)
    return TensorType(tuple(s for i, s in enumerate(data.shape) if i not in drop), data.dtype)


def _squeeze(attrs: SqueezeAttrs, x: np.ndarray) -> np.ndarray:
    return x.reshape([s for i, s in enumerate(x.shape) if i not in _squeeze_axes("squeeze", x.shape, attrs)])


def _expand_shape(op_name: str, shape: tuple[int, ...], attrs: ExpandDimsAttrs) -> tuple[int, ...]:
    ndim = len(shape)
    expect(
        -ndim - 1 <= attrs.axis <= ndim, op_name, f"axis {attrs.axis} is out of range for {ndim} dimensions"
    )
    expect(attrs.num_newaxis >= 0, op_name, f"num_newaxis {attrs.num_newaxis} is negative")
    axis = attrs.axis % (ndim + 1)
    return shape[:axis] + (1,) * attrs.num_newaxis + shape[axis:]


def _expand_dims_relation(op_name: str, arg_types: Sequence[Type | None], attrs: ExpandDimsAttrs) -> Type:
    data = tensor_arg(op_name, arg_types, 0, "data")
    return TensorType(_expand_shape(op_name, data.shape, attrs), data.dtype)


def _expand_dims(attrs: ExpandDimsAttrs, x: np.ndarray) -> np.ndarray:
    return x.reshape(_expand_shape("expand_dims", x.shape, attrs))


def _layout_transform_relation(
    op_name: str, arg_types: Sequence[Type | None], attrs: LayoutTransformAttrs
) -> Type:
    data = tensor_arg(op_name, arg_types, 0, "data")
    return TensorType(convert_shape(data.shape, attrs.src_layout, attrs.dst_layout), data.dtype)


def _layout_transform(attrs: LayoutTransformAttrs, x: np.ndarray) -> np.ndarray:
    return convert_array(x, attrs.src_layout, attrs.dst_layout)


register_op("reshape", ("data",), _reshape_relation, _reshape, OpPattern.INJECTIVE, ReshapeAttrs)
register_op("transpose", ("data",), _transpose_relation, _transpose, OpPattern.INJECTIVE, TransposeAttrs)
register_op(
    "concatenate", ("data",), _concatenate_relation, _concatenate, OpPattern.INJECTIVE, ConcatenateAttrs
)
register_op("squeeze", ("data",), _squeeze_relation, _squeeze, OpPattern.INJECTIVE, SqueezeAttrs)
register_op(
    "expand_dims", ("data",), _expand_dims_relation, _expand_dims, OpPattern.INJECTIVE, ExpandDimsAttrs
)
register_op(
    "layout_transform",
    ("data",),
    _layout_transform_relation,
    _layout_transform,
    OpPattern.INJECTIVE,
    LayoutTransformAttrs,
)


def reshape(data: Expr, newshape: IntOrInts, allowzero: bool = False) -> Call:
    """``data`` with a new shape (``relay.reshape``; 0 copies a dimension, -1 infers one)."""
    return make_call("reshape", [data], ReshapeAttrs(int_tuple(newshape, 1, "newshape"), bool(allowzero)))


def transpose(data: Expr, axes: Sequence[int] | None = None) -> Call:
    """Permute the axes (``relay.transpose``; None reverses them)."""
    return make_call(
        "transpose", [data], TransposeAttrs(None if axes is None else int_tuple(axes, None, "axes"))
    )


def concatenate(data: Sequence[Expr] | Expr, axis: int) -> Call:
    """Join tensors along ``axis`` (``relay.concatenate``); ``data`` is a list or a Tuple."""
    tup = data if isinstance(data, Expr) else Tuple(list(data))
    return make_call("concatenate", [tup], ConcatenateAttrs(int(axis)))


def squeeze(data: Expr, axis: Sequence[int] | None = None) -> Call:
    """Drop axes of size 1 (``relay.squeeze``)."""
    return make_call("squeeze", [data], SqueezeAttrs(None if axis is None else int_tuple(axis, 1, "axis")))


def expand_dims(data: Expr, axis: int, num_newaxis: int = 1) -> Call:
    """Insert ``num_newaxis`` axes of size 1 at ``axis`` (``relay.expand_dims``)."""
    return make_call("expand_dims", [data], ExpandDimsAttrs(int(axis), int(num_newaxis)))


def layout_transform(data: Expr, src_layout: str, dst_layout: str) -> Call:
    """Rearrange ``data`` from ``src_layout`` into ``dst_layout`` (``relay.layout_transform``),
    e.g. ``"NCHW"`` to ``"NCHW16c"``."""
    return make_call("layout_transform", [data], LayoutTransformAttrs(src_layout, dst_layout))
