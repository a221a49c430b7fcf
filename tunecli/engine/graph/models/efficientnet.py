"""EfficientNet-B0: mobile inverted bottlenecks (MBConv) with squeeze-and-excitation and swish.

Tan and Le, "EfficientNet: Rethinking Model Scaling for Convolutional Neural Networks", B0's stage
table at 224x224.  Block ``b<i>_<j>`` (the ``j``-th repeat of stage ``i``) has ``_expand`` (1x1,
unless the expansion is 1), ``_depthwise`` (3x3 or 5x5) and ``_project`` (1x1) convolutions, each
followed by a batch norm, and a squeeze-and-excitation between depthwise and project: global
average pool, ``_se_reduce`` and ``_se_expand`` 1x1 convolutions with biases, swish between them and
a sigmoid gate multiplied into every pixel.  Swish is ``x * sigmoid(x)``.  A block keeping its
shape adds its input.
"""

from __future__ import annotations

from tunecli.engine.runtime import NDArray

from ..graph_expr import Expr, Function, var
from ..ir_module import IRModule
from ..ops.broadcast import multiply
from ..ops.pool import global_avg_pool2d
from ..ops.unary import sigmoid
from ..traversal import free_vars
from .init import create_workload
from .layers import conv2d_bias, inverted_bottleneck, pooled_classifier, same_conv_bn

#: (expansion t, kernel k, first stride s, output channels c, repeats n) per stage, as in the paper.
STAGES = (
    (1, 3, 1, 16, 1),
    (6, 3, 2, 24, 2),
    (6, 5, 2, 40, 2),
    (6, 3, 2, 80, 3),
    (6, 5, 1, 112, 3),
    (6, 5, 2, 192, 4),
    (6, 3, 1, 320, 1),
)
#: Squeeze-and-excitation width as a share of the block's input channels.
SE_RATIO = 0.25


def swish(x: Expr) -> Expr:
    """``x * sigmoid(x)`` (SiLU)."""
    return multiply(x, sigmoid(x))


def _conv_bn_swish(data: Expr, name: str, channels: int, kernel: int, stride: int) -> Expr:
    return swish(same_conv_bn(data, name, channels, kernel, stride, epsilon=1e-3))


def squeeze_excitation(data: Expr, name: str, channels: int, squeezed: int) -> Expr:
    """Scale each channel of ``data`` by a gate in (0, 1) computed from its spatial mean."""
    pooled = global_avg_pool2d(data)
    reduced = swish(conv2d_bias(pooled, f"{name}_se_reduce", channels=squeezed, kernel_size=(1, 1)))
    gate = sigmoid(conv2d_bias(reduced, f"{name}_se_expand", channels=channels, kernel_size=(1, 1)))
    return multiply(data, gate)


def mbconv(
    data: Expr, name: str, in_channels: int, out_channels: int, kernel: int, stride: int, expansion: int
) -> Expr:
    """Expand (1x1), depthwise ``kernel`` x ``kernel`` with ``stride``, squeeze-and-excitation,
    project (1x1, linear); add the input when the shape is kept."""
    squeezed = max(1, int(in_channels * SE_RATIO))

    def excite(hidden: Expr, channels: int) -> Expr:
        return squeeze_excitation(hidden, name, channels, squeezed)

    return inverted_bottleneck(data, name, in_channels, out_channels, kernel, stride, expansion, swish,
                               epsilon=1e-3, hidden_step=excite)


def efficientnet_b0(
    num_classes: int = 1000, data_shape: tuple[int, ...] = (1, 3, 224, 224), dtype: str = "float32"
) -> Function:
    """The EfficientNet-B0 function (NCHW): ``data`` -> class probabilities."""
    data = var("data", shape=data_shape, dtype=dtype)
    channels = 32
    body = _conv_bn_swish(data, "stem", channels, 3, 2)
    for i, (t, k, s, c, n) in enumerate(STAGES, start=1):
        for j in range(n):
            body = mbconv(body, f"b{i}_{j + 1}", channels, c, k, s if j == 0 else 1, t)
            channels = c
    body = _conv_bn_swish(body, "head", 1280, 1, 1)
    out = pooled_classifier(global_avg_pool2d(body), "fc", num_classes)
    return Function(free_vars(out), out)


def get_workload(
    batch_size: int = 1,
    num_classes: int = 1000,
    image_shape: tuple[int, ...] = (3, 224, 224),
    dtype: str = "float32",
) -> tuple[IRModule, dict[str, NDArray]]:
    """EfficientNet-B0 with random weights: ``(mod, params)``.

    Parameters
    ----------
    batch_size, num_classes : int
    image_shape : tuple of int
        ``(C, H, W)``.
    dtype : str

    Returns
    -------
    (IRModule, dict of str to NDArray)
    """
    return create_workload(efficientnet_b0(num_classes, (batch_size, *image_shape), dtype))
