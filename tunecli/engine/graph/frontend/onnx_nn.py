"""ONNX neural-network operators: convolution, Gemm, batch and layer normalisation, pooling,
activations, softmax, padding and dropout (inference), converted to the graph's NCHW operators
(MatMul and Einsum: ``onnx_matmul``)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..graph_expr import Expr, const
from ..ops.conv import conv2d
from ..ops.layer_norm import layer_norm
from ..ops.nn import batch_norm, bias_add, dense, pad, softmax
from ..ops.pool import avg_pool2d, global_avg_pool2d, max_pool2d
from ..ops.replicate import broadcast_to
from ..ops.transform import reshape, transpose
from ..ops.unary import clip, leaky_relu, relu, sigmoid, tanh
from .onnx_node import NodeContext
from .onnx_table import Outputs, Value, converter

# --- convolution and pooling windows -------------------------------------------------------------


def _four_d(ctx: NodeContext, i: int = 0) -> tuple[int, ...]:
    shape = ctx.shape(i)
    if len(shape) != 4:
        raise ctx.error(f"only 2-D operations on NCHW data are supported; input {i} has shape {shape}")
    return shape


def _window_pads(
    ctx: NodeContext,
    in_hw: tuple[int, ...],
    kernel: tuple[int, ...],
    strides: tuple[int, ...],
    dilations: tuple[int, ...],
) -> tuple[int, int, int, int]:
    """``(top, left, bottom, right)`` from ``pads`` or ``auto_pad``."""
    auto_pad = ctx.attr("auto_pad", "NOTSET")
    if auto_pad == "NOTSET":
        pads = ctx.int_list("pads", (0, 0, 0, 0))
        if len(pads) != 4 or min(pads) < 0:
            raise ctx.error(f"pads {pads}: expected 4 non-negative values (top, left, bottom, right)")
        return pads[0], pads[1], pads[2], pads[3]
    if auto_pad == "VALID":
        return 0, 0, 0, 0
    if auto_pad not in ("SAME_UPPER", "SAME_LOWER"):
        raise ctx.error(f"auto_pad {auto_pad!r}; supported: NOTSET, VALID, SAME_UPPER, SAME_LOWER")
    begins, ends = [], []
    for size, k, s, d in zip(in_hw, kernel, strides, dilations, strict=True):
        total = max((math.ceil(size / s) - 1) * s + (k - 1) * d + 1 - size, 0)
        small, large = total // 2, total - total // 2
        begins.append(small if auto_pad == "SAME_UPPER" else large)
        ends.append(large if auto_pad == "SAME_UPPER" else small)
    return begins[0], begins[1], ends[0], ends[1]


def _pair(ctx: NodeContext, key: str, default: int) -> tuple[int, int]:
    values = ctx.int_list(key, (default, default))
    if len(values) != 2:
        raise ctx.error(f"{key} {values}: expected 2 values for a 2-D operation")
    return values[0], values[1]


@converter("Conv")
def _conv(ctx: NodeContext) -> Value:
    data_shape = _four_d(ctx, 0)
    weight_shape = _four_d(ctx, 1)
    kernel = weight_shape[2:]
    if ctx.int_list("kernel_shape", kernel) != kernel:
        raise ctx.error(f"kernel_shape {ctx.attr('kernel_shape')} differs from the weight's {kernel}")
    strides, dilations = _pair(ctx, "strides", 1), _pair(ctx, "dilations", 1)
    padding = _window_pads(ctx, data_shape[2:], kernel, strides, dilations)
    out = conv2d(
        ctx.expr(0),
        ctx.expr(1),
        strides=strides,
        padding=padding,
        dilation=dilations,
        groups=ctx.attr("group", 1),
        channels=weight_shape[0],
        kernel_size=kernel,
    )
    return bias_add(out, ctx.expr(2), axis=1) if ctx.has_input(2) else out


@dataclass(frozen=True)
class _PoolWindow:
    """A pool's window in the graph's terms."""

    pool_size: tuple[int, int]
    strides: tuple[int, int]
    dilation: tuple[int, int]
    padding: tuple[int, int, int, int]
    ceil_mode: bool


def _pool_window(ctx: NodeContext, pads_counted: bool) -> _PoolWindow:
    """The window of a pool; ``pads_counted``: whether padded elements enter the result."""
    data_shape = _four_d(ctx)
    if "kernel_shape" not in ctx.attrs:
        raise ctx.error("the kernel_shape attribute is required")
    kernel, strides = _pair(ctx, "kernel_shape", 1), _pair(ctx, "strides", 1)
    dilations = _pair(ctx, "dilations", 1)
    padding = _window_pads(ctx, data_shape[2:], kernel, strides, dilations)
    if not ctx.attr("ceil_mode", 0):
        return _PoolWindow(kernel, strides, dilations, padding, False)
    # In ceil mode a last window starting in the end padding is dropped (as onnxruntime and
    # PyTorch do), so each dimension has its floor or its ceil size.
    extra, wants_ceil = [], []
    for size, k, s, d, begin, end in zip(data_shape[2:], kernel, strides, dilations, padding[:2], padding[2:],
                                         strict=True):
        span = size + begin + end - ((k - 1) * d + 1)
        ceil_out = -(-span // s) + 1
        ceil = ceil_out > span // s + 1 and (ceil_out - 1) * s < size + begin
        wants_ceil.append(ceil)
        extra.append((ceil_out - 1) * s - span if ceil else 0)
    if all(wants_ceil) or not any(wants_ceil):
        return _PoolWindow(kernel, strides, dilations, padding, all(wants_ceil))
    if pads_counted:
        raise ctx.error(
            "ceil_mode with count_include_pad where only one dimension rounds up is not supported"
        )
    top, left, bottom, right = padding
    return _PoolWindow(kernel, strides, dilations, (top, left, bottom + extra[0], right + extra[1]), False)


@converter("MaxPool")
def _max_pool(ctx: NodeContext) -> Value:
    if ctx.attr("storage_order", 0) != 0:
        raise ctx.error("storage_order 1 (column-major indices) is not supported")
    w = _pool_window(ctx, pads_counted=False)
    return max_pool2d(
        ctx.expr(0), w.pool_size, w.strides, w.dilation, w.padding, ceil_mode=w.ceil_mode
    )


@converter("AveragePool")
def _avg_pool(ctx: NodeContext) -> Value:
    include = bool(ctx.attr("count_include_pad", 0))
    w = _pool_window(ctx, pads_counted=include)
    return avg_pool2d(
        ctx.expr(0), w.pool_size, w.strides, w.dilation, w.padding, ceil_mode=w.ceil_mode,
        count_include_pad=include,
    )


@converter("GlobalAveragePool")
def _global_avg_pool(ctx: NodeContext) -> Value:
    _four_d(ctx)
    return global_avg_pool2d(ctx.expr(0))


# --- Gemm -----------------------------------------------------------------------------------------------


def _transposed(ctx: NodeContext, i: int) -> Expr:
    """Input ``i`` (2-D) transposed; folded when the value is known at import."""
    name = ctx.inputs[i]
    if ctx.store.foldable(name):
        return const(np.ascontiguousarray(ctx.store.arrays[name].T))
    return transpose(ctx.expr(i), (1, 0))


@converter("Gemm")
def _gemm(ctx: NodeContext) -> Value:
    a_shape, b_shape = ctx.shape(0), ctx.shape(1)
    if len(a_shape) != 2 or len(b_shape) != 2:
        raise ctx.error(f"A and B must be 2-D, got {a_shape} and {b_shape}")
    a = transpose(ctx.expr(0), (1, 0)) if ctx.attr("transA", 0) else ctx.expr(0)
    b = ctx.expr(1) if ctx.attr("transB", 0) else _transposed(ctx, 1)
    units = b_shape[0] if ctx.attr("transB", 0) else b_shape[1]
    out: Expr = dense(a, b, units=units)
    alpha, beta = float(ctx.attr("alpha", 1.0)), float(ctx.attr("beta", 1.0))
    dtype = ctx.tensor_type(0).dtype
    if alpha != 1.0:
        out = out * const(alpha, dtype)
    if not ctx.has_input(2) or beta == 0.0:
        return out
    c_name = ctx.inputs[2]
    if beta != 1.0 and ctx.store.foldable(c_name):
        c = const((ctx.store.arrays[c_name] * beta).astype(dtype))
    else:
        c = ctx.expr(2) if beta == 1.0 else ctx.expr(2) * const(beta, dtype)
    if ctx.shape(2) == (units,):
        return bias_add(out, c, axis=1)
    return out + c


# --- normalisation, activations, softmax ------------------------------------------------------------


@converter("LayerNormalization", since=17)
def _layer_norm(ctx: NodeContext) -> Outputs:
    shape = ctx.shape(0)
    axis = ctx.axis(ctx.attr("axis", -1), len(shape))
    if ctx.attr("stash_type", 1) != 1:
        raise ctx.error(f"stash_type {ctx.attr('stash_type')}: only float32 statistics (1) are supported")
    width = int(np.prod(shape[axis:], dtype=np.int64))
    dtype = ctx.tensor_type(0).dtype
    gamma = _norm_vector(ctx, 1, shape[axis:], width, 1.0, dtype)
    beta = _norm_vector(ctx, 2, shape[axis:], width, 0.0, dtype)
    x = ctx.expr(0) if axis == len(shape) - 1 else reshape(ctx.expr(0), (*shape[:axis], width))
    out: Expr = layer_norm(x, gamma, beta, axis=-1, epsilon=float(ctx.attr("epsilon", 1e-5)),
                           center=ctx.has_input(2))
    return out if axis == len(shape) - 1 else reshape(out, shape)


def _norm_vector(
    ctx: NodeContext, i: int, normalised: tuple[int, ...], width: int, fill: float, dtype: str
) -> Expr:
    """LayerNormalization's scale or bias as one value per normalised element."""
    if not ctx.has_input(i):
        return const(np.full(width, fill, dtype=dtype))
    given = ctx.shape(i)
    if given == normalised or int(np.prod(given, dtype=np.int64)) == width:
        return ctx.expr(i) if given == (width,) else reshape(ctx.expr(i), (width,))
    if ctx.store.foldable(ctx.inputs[i]):
        value = np.broadcast_to(ctx.store.arrays[ctx.inputs[i]], normalised)
        return const(value.reshape(width).astype(dtype))
    return reshape(broadcast_to(ctx.expr(i), normalised), (width,))


@converter("BatchNormalization")
def _batch_norm(ctx: NodeContext) -> Outputs:
    if ctx.attr("training_mode", 0):
        raise ctx.error("training_mode 1 is not supported (inference only)")
    if ctx.opset < 9 and ctx.attr("spatial", 1) != 1:
        raise ctx.error("spatial 0 (per-element statistics) is not supported")
    args = [ctx.expr(i) for i in range(5)]
    return batch_norm(*args, axis=1, epsilon=float(ctx.attr("epsilon", 1e-5)))[0]


@converter("Relu")
def _relu(ctx: NodeContext) -> Value:
    return relu(ctx.expr(0))


@converter("LeakyRelu")
def _leaky_relu(ctx: NodeContext) -> Value:
    return leaky_relu(ctx.expr(0), float(ctx.attr("alpha", 0.01)))


@converter("Sigmoid")
def _sigmoid(ctx: NodeContext) -> Value:
    return sigmoid(ctx.expr(0))


@converter("Tanh")
def _tanh(ctx: NodeContext) -> Value:
    return tanh(ctx.expr(0))


@converter("Clip")
def _clip(ctx: NodeContext) -> Value:
    dtype = np.dtype(ctx.tensor_type(0).dtype)
    info = np.finfo(dtype) if np.issubdtype(dtype, np.floating) else np.iinfo(dtype)
    if ctx.opset < 11:
        low, high = float(ctx.attr("min", info.min)), float(ctx.attr("max", info.max))
    else:
        low = ctx.scalar(1, "min") if ctx.has_input(1) else float(info.min)
        high = ctx.scalar(2, "max") if ctx.has_input(2) else float(info.max)
    return clip(ctx.expr(0), low, high)


@converter("Softmax")
def _softmax(ctx: NodeContext) -> Value:
    shape = ctx.shape(0)
    if ctx.opset >= 13:
        return softmax(ctx.expr(0), axis=ctx.axis(ctx.attr("axis", -1), len(shape)))
    # Before opset 13 the input is read as a 2-D matrix split at ``axis``.
    axis = ctx.axis(ctx.attr("axis", 1), len(shape))
    if axis == len(shape) - 1:
        return softmax(ctx.expr(0), axis=axis)
    rows = int(np.prod(shape[:axis], dtype=np.int64))
    flat = reshape(ctx.expr(0), (rows, -1))
    return reshape(softmax(flat, axis=1), shape)


# --- padding and dropout ----------------------------------------------------------------------------


@converter("Pad")
def _pad(ctx: NodeContext) -> Value:
    ndim = len(ctx.shape(0))
    if ctx.opset < 11:
        pads, value = ctx.int_list("pads", ()), float(ctx.attr("value", 0.0))
        axes = tuple(range(ndim))
    else:
        pads = ctx.ints(1, "pads")
        value = ctx.scalar(2, "constant_value") if ctx.has_input(2) else 0.0
        axes = ctx.ints(3, "axes") if ctx.has_input(3) else tuple(range(ndim))
    axes = tuple(ctx.axis(a, ndim, "axes entry") for a in axes)
    if len(pads) != 2 * len(axes):
        raise ctx.error(f"pads {pads} must have 2 values per padded axis ({len(axes)} axes)")
    if min(pads, default=0) < 0:
        raise ctx.error(f"pads {pads}: negative pads (cropping) are not supported")
    width = [(0, 0)] * ndim
    for j, a in enumerate(axes):
        width[a] = (pads[j], pads[j + len(axes)])
    mode = ctx.attr("mode", "constant")
    if mode not in ("constant", "edge", "reflect"):
        raise ctx.error(f"mode {mode!r}; supported: constant, edge, reflect")
    return pad(ctx.expr(0), tuple(width), pad_value=value, pad_mode=mode)


@converter("Dropout")
def _dropout(ctx: NodeContext) -> Outputs:
    if ctx.opset >= 12 and ctx.has_input(2) and ctx.scalar(2, "training_mode"):
        raise ctx.error("training_mode true is not supported (inference only)")
    if ctx.num_outputs < 2:
        return ctx.expr(0)
    return ctx.expr(0), np.ones(ctx.shape(0), dtype=bool)
