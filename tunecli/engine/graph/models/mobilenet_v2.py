"""MobileNet v2: inverted residual blocks with linear bottlenecks, ReLU6 as ``clip(0, 6)``.

Sandler et al., "MobileNetV2: Inverted Residuals and Linear Bottlenecks".  Block ``b<i>_<j>`` (the
``j``-th repeat of stage ``i``) has ``_expand`` (1x1), ``_depthwise`` (3x3) and ``_project`` (1x1)
convolutions, each followed by a batch norm; a block keeping its shape adds its input.
"""

from __future__ import annotations

from tunecli.engine.runtime import NDArray

from ..graph_expr import Expr, Function, var
from ..ir_module import IRModule
from ..ops.pool import global_avg_pool2d
from ..ops.unary import clip
from ..traversal import free_vars
from .init import create_workload
from .layers import inverted_bottleneck, pooled_classifier, same_conv_bn

#: (expansion t, output channels c, repeats n, first stride s) per stage, as in the paper.
STAGES = (
    (1, 16, 1, 1),
    (6, 24, 2, 2),
    (6, 32, 3, 2),
    (6, 64, 4, 2),
    (6, 96, 3, 1),
    (6, 160, 3, 2),
    (6, 320, 1, 1),
)


def relu6(x: Expr) -> Expr:
    """ReLU6: ``clip(x, 0, 6)``."""
    return clip(x, 0.0, 6.0)


def inverted_residual(
    data: Expr, name: str, in_channels: int, out_channels: int, stride: int, expansion: int
) -> Expr:
    """Expand (1x1, unless the expansion is 1), depthwise 3x3 with ``stride``, project (1x1, linear);
    add the input when the shape is kept."""
    return inverted_bottleneck(data, name, in_channels, out_channels, 3, stride, expansion, relu6)


def mobilenet_v2(
    num_classes: int = 1000,
    data_shape: tuple[int, ...] = (1, 3, 224, 224),
    dtype: str = "float32",
    multiplier: float = 1.0,
) -> Function:
    """The MobileNet v2 function (NCHW): ``data`` -> class probabilities."""
    data = var("data", shape=data_shape, dtype=dtype)
    channels = int(32 * multiplier)
    body = relu6(same_conv_bn(data, "conv_first", channels, 3, 2))
    for i, (t, c, n, s) in enumerate(STAGES, start=1):
        out_channels = int(c * multiplier)
        for j in range(n):
            body = inverted_residual(body, f"b{i}_{j + 1}", channels, out_channels, s if j == 0 else 1, t)
            channels = out_channels
    body = relu6(same_conv_bn(body, "conv_last", max(1280, int(1280 * multiplier)), 1, 1))
    out = pooled_classifier(global_avg_pool2d(body), "fc", num_classes)
    return Function(free_vars(out), out)


def get_workload(
    batch_size: int = 1,
    num_classes: int = 1000,
    image_shape: tuple[int, ...] = (3, 224, 224),
    dtype: str = "float32",
    multiplier: float = 1.0,
) -> tuple[IRModule, dict[str, NDArray]]:
    """MobileNet v2 with random weights: ``(mod, params)``.

    Parameters
    ----------
    batch_size, num_classes : int
    image_shape : tuple of int
        ``(C, H, W)``.
    dtype : str
    multiplier : float
        Width multiplier of every layer.

    Returns
    -------
    (IRModule, dict of str to NDArray)
    """
    return create_workload(mobilenet_v2(num_classes, (batch_size, *image_shape), dtype, multiplier))
