"""Neural-network operators: nn.dense, nn.batch_matmul (OUT_ELEMWISE_FUSABLE), nn.bias_add
(BROADCAST), nn.batch_norm, nn.softmax, nn.log_softmax, nn.dropout (OPAQUE), nn.batch_flatten and
nn.pad (INJECTIVE)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from tunecli.engine.ops.reference import batch_matmul as batch_matmul_python
from tunecli.engine.ops.reference import bias_add_python, dense_python

from ..graph_expr import Call, Expr, TupleWrapper
from ..op_registry import Attrs, NoAttrs, OpPattern, Solved, expect, tensor_arg
from ..types import TensorType, TupleType, Type
from .define import IntOrInts, int_tuple, make_call, normalize_axis, out_dtype_of, register_op


@dataclass(frozen=True)
class DenseAttrs(Attrs):
    """``nn.dense``: output units (optional) and output dtype."""

    units: int | None = None
    out_dtype: str = ""


@dataclass(frozen=True)
class BatchMatmulAttrs(Attrs):
    """``nn.batch_matmul``: output dtype and which operands are transposed."""

    out_dtype: str = ""
    transpose_a: bool = False
    transpose_b: bool = True


@dataclass(frozen=True)
class BiasAddAttrs(Attrs):
    """``nn.bias_add``: the channel axis."""

    axis: int = 1


@dataclass(frozen=True)
class BatchNormAttrs(Attrs):
    """``nn.batch_norm``: channel axis, epsilon, and whether beta / gamma are used."""

    axis: int = 1
    epsilon: float = 1e-5
    center: bool = True
    scale: bool = True


@dataclass(frozen=True)
class SoftmaxAttrs(Attrs):
    """``nn.softmax`` / ``nn.log_softmax``: the axis."""

    axis: int = -1


@dataclass(frozen=True)
class DropoutAttrs(Attrs):
    """``nn.dropout``: the drop rate (inference keeps every value)."""

    rate: float = 0.5


@dataclass(frozen=True)
class PadAttrs(Attrs):
    """``nn.pad``: ``(before, after)`` per dimension, the value and the mode."""

    pad_width: tuple[tuple[int, int], ...] = ()
    pad_value: float = 0.0
    pad_mode: str = "constant"


def _dense_relation(op_name: str, arg_types: Sequence[Type | None], attrs: DenseAttrs) -> Solved:
    data = tensor_arg(op_name, arg_types, 0, "data")
    expect(data.ndim >= 1, op_name, "data must have at least one dimension")
    if arg_types[1] is None:
        expect(attrs.units is not None, op_name, "the weight has no shape; give it one or give units")
        weight = TensorType((attrs.units, data.shape[-1]), data.dtype)
    else:
        weight = tensor_arg(op_name, arg_types, 1, "weight")
    expect(weight.ndim == 2, op_name, f"the weight must be 2-D [units, in_dim], got {weight.shape}")
    expect(
        weight.shape[1] == data.shape[-1],
        op_name,
        f"data {data.shape} has {data.shape[-1]} input features but the weight {weight.shape} expects "
        f"{weight.shape[1]}",
    )
    if attrs.units is not None:
        expect(
            attrs.units == weight.shape[0],
            op_name,
            f"units={attrs.units} but the weight has {weight.shape[0]}",
        )
    out = TensorType((*data.shape[:-1], weight.shape[0]), out_dtype_of(attrs.out_dtype, data.dtype))
    return Solved(out, (data, weight))


def _dense(attrs: DenseAttrs, data: np.ndarray, weight: np.ndarray) -> np.ndarray:
    flat = data.reshape(-1, data.shape[-1])
    out = dense_python(flat, weight, out_dtype=out_dtype_of(attrs.out_dtype, str(data.dtype)))
    return out.reshape(*data.shape[:-1], weight.shape[0])


def _batch_matmul_relation(op_name: str, arg_types: Sequence[Type | None], attrs: BatchMatmulAttrs) -> Type:
    x = tensor_arg(op_name, arg_types, 0, "x")
    y = tensor_arg(op_name, arg_types, 1, "y")
    expect(x.ndim == 3 and y.ndim == 3, op_name, f"operands must be 3-D, got {x.shape} and {y.shape}")
    bx, m, kx = (x.shape[0], x.shape[2], x.shape[1]) if attrs.transpose_a else x.shape
    by, ky, n = (y.shape[0], y.shape[2], y.shape[1]) if attrs.transpose_b else y.shape
    expect(
        kx == ky,
        op_name,
        f"reduction sizes differ: x {x.shape} gives {kx}, y {y.shape} gives {ky} "
        f"(transpose_a={attrs.transpose_a}, transpose_b={attrs.transpose_b})",
    )
    expect(bx == by or 1 in (bx, by), op_name, f"batch sizes {bx} and {by} do not broadcast")
    return TensorType((max(bx, by), m, n), out_dtype_of(attrs.out_dtype, x.dtype))


def _batch_matmul(attrs: BatchMatmulAttrs, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    return batch_matmul_python(
        x, y, out_dtype_of(attrs.out_dtype, str(x.dtype)), attrs.transpose_a, attrs.transpose_b
    )


def _bias_add_relation(op_name: str, arg_types: Sequence[Type | None], attrs: BiasAddAttrs) -> Solved:
    data = tensor_arg(op_name, arg_types, 0, "data")
    axis = normalize_axis(op_name, attrs.axis, data.ndim)
    bias = TensorType((data.shape[axis],), data.dtype)
    if arg_types[1] is not None:
        given = tensor_arg(op_name, arg_types, 1, "bias")
        expect(
            given == bias,
            op_name,
            f"the bias must be {bias} for data {data} on axis {attrs.axis}, got {given}",
        )
    return Solved(data, (data, bias))


def _bias_add(attrs: BiasAddAttrs, data: np.ndarray, bias: np.ndarray) -> np.ndarray:
    return bias_add_python(data, bias, attrs.axis)


def _batch_norm_relation(op_name: str, arg_types: Sequence[Type | None], attrs: BatchNormAttrs) -> Solved:
    data = tensor_arg(op_name, arg_types, 0, "data")
    axis = normalize_axis(op_name, attrs.axis, data.ndim)
    vec = TensorType((data.shape[axis],), data.dtype)
    names = ("gamma", "beta", "moving_mean", "moving_var")
    for i, name in enumerate(names, start=1):
        if arg_types[i] is not None:
            given = tensor_arg(op_name, arg_types, i, name)
            expect(
                given == vec,
                op_name,
                f"{name} must be {vec} for data {data} on axis {attrs.axis}, got {given}",
            )
    return Solved(TupleType((data, vec, vec)), (data, vec, vec, vec, vec))


def _batch_norm(
    attrs: BatchNormAttrs,
    data: np.ndarray,
    gamma: np.ndarray,
    beta: np.ndarray,
    mean: np.ndarray,
    var: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    shape = [1] * data.ndim
    shape[attrs.axis % data.ndim] = -1
    scale = 1.0 / np.sqrt(var.astype(np.float64) + attrs.epsilon)
    if attrs.scale:
        scale = scale * gamma
    out = (data - mean.reshape(shape)) * scale.reshape(shape)
    if attrs.center:
        out = out + beta.reshape(shape)
    return out.astype(data.dtype), mean, var


def _softmax(attrs: SoftmaxAttrs, x: np.ndarray) -> np.ndarray:
    shifted = x.astype(np.float64) - x.max(axis=attrs.axis, keepdims=True)
    e = np.exp(shifted)
    return (e / e.sum(axis=attrs.axis, keepdims=True)).astype(x.dtype)


def _log_softmax(attrs: SoftmaxAttrs, x: np.ndarray) -> np.ndarray:
    shifted = x.astype(np.float64) - x.max(axis=attrs.axis, keepdims=True)
    return (shifted - np.log(np.exp(shifted).sum(axis=attrs.axis, keepdims=True))).astype(x.dtype)


def _softmax_relation(op_name: str, arg_types: Sequence[Type | None], attrs: SoftmaxAttrs) -> Type:
    data = tensor_arg(op_name, arg_types, 0, "data")
    normalize_axis(op_name, attrs.axis, data.ndim)
    return data


def _dropout_relation(op_name: str, arg_types: Sequence[Type | None], attrs: DropoutAttrs) -> Type:
    data = tensor_arg(op_name, arg_types, 0, "data")
    return TupleType((data, data))


def _dropout(attrs: DropoutAttrs, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return x, np.ones_like(x)


def _batch_flatten_relation(op_name: str, arg_types: Sequence[Type | None], attrs: NoAttrs) -> Type:
    data = tensor_arg(op_name, arg_types, 0, "data")
    expect(data.ndim >= 1, op_name, "data must have a batch dimension")
    return TensorType((data.shape[0], int(np.prod(data.shape[1:], dtype=np.int64))), data.dtype)


def _batch_flatten(attrs: NoAttrs, x: np.ndarray) -> np.ndarray:
    return x.reshape(x.shape[0], -1)


def _pad_relation(op_name: str, arg_types: Sequence[Type | None], attrs: PadAttrs) -> Type:
    data = tensor_arg(op_name, arg_types, 0, "data")
    expect(
        len(attrs.pad_width) == data.ndim,
        op_name,
        f"pad_width has {len(attrs.pad_width)} entries for {data.ndim} dimensions",
    )
    expect(
        all(b >= 0 and a >= 0 for b, a in attrs.pad_width), op_name, f"negative pad_width {attrs.pad_width}"
    )
    expect(
        attrs.pad_mode in ("constant", "edge", "reflect"),
        op_name,
        f"pad_mode {attrs.pad_mode!r}; supported: constant, edge, reflect",
    )
    return TensorType(
        tuple(s + b + a for s, (b, a) in zip(data.shape, attrs.pad_width, strict=True)), data.dtype
    )


def _pad(attrs: PadAttrs, x: np.ndarray) -> np.ndarray:
    if attrs.pad_mode == "constant":
        return np.pad(x, attrs.pad_width, constant_values=np.asarray(attrs.pad_value, dtype=x.dtype))
    return np.pad(x, attrs.pad_width, mode=attrs.pad_mode)


register_op(
    "nn.dense",
    ("data", "weight"),
    _dense_relation,
    _dense,
    OpPattern.OUT_ELEMWISE_FUSABLE,
    DenseAttrs,
    strategy_op="dense",
)
register_op(
    "nn.batch_matmul",
    ("tensor_a", "tensor_b"),
    _batch_matmul_relation,
    _batch_matmul,
    OpPattern.OUT_ELEMWISE_FUSABLE,
    BatchMatmulAttrs,
    strategy_op="batch_matmul",
)
register_op("nn.bias_add", ("data", "bias"), _bias_add_relation, _bias_add, OpPattern.BROADCAST, BiasAddAttrs)
register_op(
    "nn.batch_norm",
    ("data", "gamma", "beta", "moving_mean", "moving_var"),
    _batch_norm_relation,
    _batch_norm,
    OpPattern.OPAQUE,
    BatchNormAttrs,
)
register_op("nn.softmax", ("data",), _softmax_relation, _softmax, OpPattern.OPAQUE, SoftmaxAttrs)
register_op("nn.log_softmax", ("data",), _softmax_relation, _log_softmax, OpPattern.OPAQUE, SoftmaxAttrs)
register_op("nn.dropout", ("data",), _dropout_relation, _dropout, OpPattern.OPAQUE, DropoutAttrs)
register_op("nn.batch_flatten", ("data",), _batch_flatten_relation, _batch_flatten, OpPattern.INJECTIVE)
register_op("nn.pad", ("data",), _pad_relation, _pad, OpPattern.INJECTIVE, PadAttrs)


def dense(data: Expr, weight: Expr, units: int | None = None, out_dtype: str = "") -> Call:
    """``data @ weight.T`` with weight ``[units, in_dim]`` (``relay.nn.dense``)."""
    return make_call("nn.dense", [data, weight], DenseAttrs(None if units is None else int(units), out_dtype))


def batch_matmul(
    tensor_a: Expr, tensor_b: Expr, out_dtype: str = "", transpose_a: bool = False, transpose_b: bool = True
) -> Call:
    """Batched matrix product, ``tensor_b`` transposed by default (``relay.nn.batch_matmul``)."""
    attrs = BatchMatmulAttrs(out_dtype, bool(transpose_a), bool(transpose_b))
    return make_call("nn.batch_matmul", [tensor_a, tensor_b], attrs)


def bias_add(data: Expr, bias: Expr, axis: int = 1) -> Call:
    """Add a 1-D ``bias`` along ``axis`` (``relay.nn.bias_add``)."""
    return make_call("nn.bias_add", [data, bias], BiasAddAttrs(int(axis)))


def batch_norm(
    data: Expr,
    gamma: Expr,
    beta: Expr,
    moving_mean: Expr,
    moving_var: Expr,
    axis: int = 1,
    epsilon: float = 1e-5,
    center: bool = True,
    scale: bool = True,
) -> TupleWrapper:
    """Inference batch normalisation (``relay.nn.batch_norm``): a 3-tuple (normalised data, mean,
    variance) whose field 0 is ``(data - mean) / sqrt(var + epsilon) * gamma + beta``."""
    attrs = BatchNormAttrs(int(axis), float(epsilon), bool(center), bool(scale))
    return TupleWrapper(make_call("nn.batch_norm", [data, gamma, beta, moving_mean, moving_var], attrs), 3)


def softmax(data: Expr, axis: int = -1) -> Call:
    """Softmax along ``axis`` (``relay.nn.softmax``)."""
    return make_call("nn.softmax", [data], SoftmaxAttrs(int(axis)))


def log_softmax(data: Expr, axis: int = -1) -> Call:
    """Log of the softmax along ``axis`` (``relay.nn.log_softmax``)."""
    return make_call("nn.log_softmax", [data], SoftmaxAttrs(int(axis)))


def dropout_raw(data: Expr, rate: float = 0.5) -> TupleWrapper:
    """Dropout's two outputs (data, mask) (``relay.nn.dropout_raw``)."""
    return TupleWrapper(make_call("nn.dropout", [data], DropoutAttrs(float(rate))), 2)


def dropout(data: Expr, rate: float = 0.5) -> Expr:
    """Dropout at inference: field 0 of ``nn.dropout``, equal to ``data`` (``relay.nn.dropout``)."""
    return dropout_raw(data, rate)[0]


def batch_flatten(data: Expr) -> Call:
    """``[N, ...]`` to ``[N, prod(...)]`` (``relay.nn.batch_flatten``)."""
    return make_call("nn.batch_flatten", [data])


def pad(
    data: Expr, pad_width: Sequence[IntOrInts], pad_value: float = 0.0, pad_mode: str = "constant"
) -> Call:
    """Pad each dimension by ``(before, after)`` (``relay.nn.pad``)."""
    widths = tuple(int_tuple(w, 2, "pad_width") for w in pad_width)
    return make_call("nn.pad", [data], PadAttrs(widths, float(pad_value), pad_mode))
