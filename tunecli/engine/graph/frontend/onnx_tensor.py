"""ONNX tensor operators: constants, shape computations, reshaping and elementwise arithmetic.

Shape, Size, Constant and ConstantOfShape only take values known at import; they and the arithmetic,
Concat, Cast, Unsqueeze, Squeeze, Reshape, Transpose and Flatten converters (and Gather and Slice,
in ``onnx_index``) fold to arrays when every input is known, which turns the
``Shape → Gather → Unsqueeze → Concat → Reshape`` chains of exported models into a constant shape.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..graph_expr import Expr
from ..ops.broadcast import add, divide, multiply, subtract
from ..ops.nn import batch_flatten
from ..ops.transform import concatenate, reshape, transpose
from ..ops.unary import cast
from .onnx_node import NodeContext, onnx_dtype
from .onnx_table import Value, converter, folder

# --- values known at import ------------------------------------------------------------------


@folder("Constant")
def _constant(ctx: NodeContext) -> Value:
    scalar_kinds = {"value_float": "float32", "value_int": "int64"}
    list_kinds = {"value_floats": "float32", "value_ints": "int64"}
    if "value" in ctx.attrs:
        return np.asarray(ctx.attrs["value"])
    for key, dtype in scalar_kinds.items():
        if key in ctx.attrs:
            return np.asarray(ctx.attrs[key], dtype=dtype)
    for key, dtype in list_kinds.items():
        if key in ctx.attrs:
            return np.asarray(list(ctx.attrs[key]), dtype=dtype)
    raise ctx.error(
        f"attributes {sorted(ctx.attrs)}: supported are value, value_float(s) and value_int(s) "
        f"(not sparse or string constants)"
    )


@folder("ConstantOfShape", since=9)
def _constant_of_shape(ctx: NodeContext) -> Value:
    shape = ctx.ints(0, "shape")
    fill = np.asarray(ctx.attr("value", np.zeros(1, dtype="float32"))).reshape(-1)
    return np.full(shape, fill[0], dtype=fill.dtype)


@folder("Shape")
def _shape(ctx: NodeContext) -> Value:
    shape = ctx.shape(0)
    start, end = ctx.attr("start", 0), ctx.attr("end", None)
    return np.asarray(shape[slice(start, end)], dtype="int64")


@folder("Size")
def _size(ctx: NodeContext) -> Value:
    return np.asarray(int(np.prod(ctx.shape(0), dtype="int64")), dtype="int64")


# --- shape changes ----------------------------------------------------------------------------


def _unsqueezed_shape(ctx: NodeContext) -> tuple[int, ...]:
    shape = ctx.shape(0)
    axes = ctx.int_list("axes", ()) if ctx.opset < 13 else ctx.ints(1, "axes")
    ndim = len(shape) + len(axes)
    wanted = sorted(ctx.axis(a, ndim, "axes entry") for a in axes)
    if len(set(wanted)) != len(wanted):
        raise ctx.error(f"axes {axes} repeat an axis")
    out, rest = [], iter(shape)
    for i in range(ndim):
        out.append(1 if i in wanted else next(rest))
    return tuple(out)


def _squeezed_shape(ctx: NodeContext) -> tuple[int, ...]:
    shape = ctx.shape(0)
    if ctx.opset < 13:
        axes = ctx.int_list("axes", ()) or None
    else:
        axes = ctx.ints(1, "axes") if ctx.has_input(1) else None
    if axes is None:
        return tuple(s for s in shape if s != 1)
    drop = {ctx.axis(a, len(shape), "axes entry") for a in axes}
    for a in drop:
        if shape[a] != 1:
            raise ctx.error(f"axis {a} of shape {shape} has size {shape[a]}, not 1")
    return tuple(s for i, s in enumerate(shape) if i not in drop)


def _reshaped_shape(ctx: NodeContext) -> tuple[int, ...]:
    shape = ctx.shape(0)
    target = ctx.ints(1, "shape")
    allowzero = bool(ctx.attr("allowzero", 0))
    out = [shape[i] if v == 0 and not allowzero else v for i, v in enumerate(target)]
    if out.count(-1) > 1 or any(v < -1 for v in out):
        raise ctx.error(f"shape {target}: at most one -1 and no other negative value")
    size = int(np.prod(shape, dtype=np.int64))
    if -1 in out:
        known = int(np.prod([v for v in out if v != -1], dtype=np.int64))
        if known == 0 or size % known:
            raise ctx.error(f"cannot reshape {shape} into {target}")
        out[out.index(-1)] = size // known
    if int(np.prod(out, dtype=np.int64)) != size:
        raise ctx.error(f"cannot reshape {shape} ({size} elements) into {tuple(out)}")
    return tuple(out)


def _flattened_shape(ctx: NodeContext) -> tuple[int, int]:
    shape = ctx.shape(0)
    axis = ctx.attr("axis", 1)
    axis = axis + len(shape) if axis < 0 else axis
    if not 0 <= axis <= len(shape):
        raise ctx.error(f"axis {ctx.attr('axis')} is out of range for {len(shape)} dimensions")
    return int(np.prod(shape[:axis], dtype=np.int64)), int(np.prod(shape[axis:], dtype=np.int64))


def _reshaping(op_type: str, shape_of: Callable[[NodeContext], tuple[int, ...]]) -> None:
    """Register ``op_type`` as a reshape of input 0 into ``shape_of(ctx)`` (folded when known)."""

    def fold(ctx: NodeContext) -> Value:
        return np.reshape(ctx.array(0, "data"), shape_of(ctx))

    def convert(ctx: NodeContext) -> Value:
        return reshape(ctx.expr(0), shape_of(ctx))

    converter(op_type, fold=fold)(convert)


_reshaping("Unsqueeze", _unsqueezed_shape)
_reshaping("Squeeze", _squeezed_shape)
_reshaping("Reshape", _reshaped_shape)


def _fold_flatten(ctx: NodeContext) -> Value:
    return np.reshape(ctx.array(0, "data"), _flattened_shape(ctx))


@converter("Flatten", fold=_fold_flatten)
def _flatten(ctx: NodeContext) -> Value:
    shape = _flattened_shape(ctx)
    if ctx.attr("axis", 1) == 1 and len(ctx.shape(0)) >= 2:
        return batch_flatten(ctx.expr(0))
    return reshape(ctx.expr(0), shape)


def _perm(ctx: NodeContext) -> tuple[int, ...]:
    ndim = len(ctx.shape(0))
    perm = ctx.int_list("perm", range(ndim - 1, -1, -1))
    if sorted(ctx.axis(p, ndim, "perm entry") for p in perm) != list(range(ndim)):
        raise ctx.error(f"perm {perm} is not a permutation of {ndim} axes")
    return perm


@converter("Transpose", fold=lambda ctx: np.transpose(ctx.array(0, "data"), _perm(ctx)))
def _transpose(ctx: NodeContext) -> Value:
    return transpose(ctx.expr(0), _perm(ctx))


def _concat_axis(ctx: NodeContext) -> int:
    if "axis" not in ctx.attrs:
        raise ctx.error("the axis attribute is required")
    return ctx.axis(ctx.attrs["axis"], len(ctx.shape(0)))


def _fold_concat(ctx: NodeContext) -> Value:
    arrays = [ctx.array(i, "input") for i in range(len(ctx.inputs))]
    return np.concatenate(arrays, axis=_concat_axis(ctx))


@converter("Concat", fold=_fold_concat)
def _concat(ctx: NodeContext) -> Value:
    return concatenate([ctx.expr(i) for i in range(len(ctx.inputs))], _concat_axis(ctx))


def _cast_dtype(ctx: NodeContext) -> str:
    return onnx_dtype(ctx.attr("to", 0), f"{ctx.op_type} node {ctx.name!r}: attribute to")


@converter("Cast", fold=lambda ctx: ctx.array(0, "input").astype(_cast_dtype(ctx)))
def _cast(ctx: NodeContext) -> Value:
    return cast(ctx.expr(0), _cast_dtype(ctx))


@converter("Identity", fold=lambda ctx: ctx.array(0, "input"))
def _identity(ctx: NodeContext) -> Value:
    return ctx.expr(0)


# --- elementwise arithmetic with numpy broadcasting ---------------------------------------------


def _divide_arrays(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    if np.issubdtype(a.dtype, np.integer):
        if np.any(b == 0):
            raise ZeroDivisionError("integer division by zero")
        return (np.abs(a) // np.abs(b) * np.sign(a) * np.sign(b)).astype(a.dtype)
    return np.divide(a, b).astype(a.dtype)


_ARITHMETIC = {
    "Add": (add, np.add),
    "Sub": (subtract, np.subtract),
    "Mul": (multiply, np.multiply),
    "Div": (divide, _divide_arrays),
}


def _arithmetic(op_type: str) -> None:
    build, compute = _ARITHMETIC[op_type]

    def fold(ctx: NodeContext) -> Value:
        a, b = ctx.array(0, "A"), ctx.array(1, "B")
        if a.dtype != b.dtype:
            raise ctx.error(f"operands have dtypes {a.dtype} and {b.dtype}")
        try:
            return np.asarray(compute(a, b)).astype(a.dtype)
        except (ValueError, ZeroDivisionError) as err:
            raise ctx.error(f"{err} (shapes {a.shape} and {b.shape})") from None

    def convert(ctx: NodeContext) -> Expr:
        return build(ctx.expr(0), ctx.expr(1))

    converter(op_type, fold=fold)(convert)


for _op_type in _ARITHMETIC:
    _arithmetic(_op_type)
