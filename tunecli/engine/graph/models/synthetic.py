"""A small network of many kinds of layer (``relay.testing.synthetic``): dense rows and a 3x3
convolution of one image, added, normalised, then mixed again.  ``get_workload(input_shape,
dtype)`` gives ``(IRModule, params)``; the image's last axis is the dense layers' width."""

from __future__ import annotations

from tunecli.engine.runtime import NDArray

from ..graph_expr import Expr, Function, var
from ..ir_module import IRModule
from ..ops.broadcast import add
from ..ops.conv import conv2d
from ..ops.nn import bias_add, dense, softmax
from ..ops.transform import reshape
from ..ops.unary import relu
from ..traversal import free_vars
from .init import create_workload
from .layers import batch_norm_infer


def _mix(image: Expr, shape: tuple[int, ...], tag: str, dtype: str) -> Expr:
    """Dense rows of ``image`` (relu) plus a softmax of a channel-preserving 3x3 convolution."""
    channels, width = shape[1], shape[3]
    rows = reshape(image, (-1, width))
    rows = relu(dense(rows, var(f"{tag}dense_weight", shape=(width, width), dtype=dtype)))
    conv = conv2d(image, var(f"{tag}conv_weight", shape=(channels, channels, 3, 3), dtype=dtype),
                  padding=(1, 1), channels=channels, kernel_size=(3, 3))
    return add(reshape(rows, shape), softmax(conv))


def get_net(input_shape: tuple[int, ...] = (1, 3, 24, 12), dtype: str = "float32") -> Function:
    """The network on an NCHW ``input_shape`` image."""
    shape = tuple(int(s) for s in input_shape)
    data = var("data", shape=shape, dtype=dtype)
    first = _mix(data, shape, "", dtype)
    normed = batch_norm_infer(bias_add(first, var("bias", dtype=dtype)), name="batch_norm")
    out = _mix(normed, shape, "second_", dtype)
    return Function(free_vars(out), out)


def get_workload(input_shape: tuple[int, ...] = (1, 3, 24, 12), dtype: str = "float32",
                 **_: object) -> tuple[IRModule, dict[str, NDArray]]:
    """``(IRModule, params)`` of :func:`get_net` with seeded random weights."""
    return create_workload(get_net(input_shape, dtype))
