"""MobileNet v1 as in TVM's ``relay.testing.mobilenet``: ``get_workload(batch_size=1)``.

Howard et al., "MobileNets".  Layer names follow TVM's (``conv_block_1_conv``,
``separable_conv_block_<i>_depthwise_conv1`` / ``_conv2``, ``fc``).
"""

from __future__ import annotations

from tunecli.engine.runtime import NDArray

from ..graph_expr import Expr, Function, var
from ..ir_module import IRModule
from ..layout import layout_shape
from ..ops.nn import batch_flatten, bias_add, dense, softmax
from ..ops.pool import global_avg_pool2d
from ..ops.unary import relu
from ..traversal import free_vars
from .init import create_workload
from .layers import LayerOption, conv2d_bn, conv_kernel_layout


def _conv_bn_relu(
    data: Expr, conv_name: str, bn_name: str, epsilon: float, layout: str, **kwargs: LayerOption
) -> Expr:
    """:func:`conv2d_bn` in ``layout`` (the kernel in its dense layout unless ``kernel_layout``
    is given), then relu."""
    kwargs.setdefault("kernel_layout", conv_kernel_layout(layout))
    return relu(conv2d_bn(data, conv_name, bn_name, epsilon, data_layout=layout, **kwargs))


def conv_block(
    data: Expr,
    name: str,
    channels: int,
    kernel_size: tuple[int, int] = (3, 3),
    strides: tuple[int, int] = (1, 1),
    padding: tuple[int, int] = (1, 1),
    epsilon: float = 1e-5,
    layout: str = "NCHW",
) -> Expr:
    """conv + batch norm + relu."""
    return _conv_bn_relu(data, f"{name}_conv", f"{name}_bn", epsilon, layout, channels=channels,
                         kernel_size=kernel_size, strides=strides, padding=padding)


def separable_conv_block(
    data: Expr,
    name: str,
    depthwise_channels: int,
    pointwise_channels: int,
    kernel_size: tuple[int, int] = (3, 3),
    downsample: bool = False,
    padding: tuple[int, int] = (1, 1),
    epsilon: float = 1e-5,
    layout: str = "NCHW",
    dtype: str = "float32",
) -> Expr:
    """Depthwise 3x3 conv + bn + relu, then pointwise 1x1 conv + bn + relu."""
    strides = (2, 2) if downsample else (1, 1)
    kernel_layout = conv_kernel_layout(layout, True)
    wshape = layout_shape(
        {"O": depthwise_channels, "I": 1, "H": kernel_size[0], "W": kernel_size[1]}, kernel_layout
    )
    weight = var(f"{name}_weight", shape=wshape, dtype=dtype)
    conv1 = _conv_bn_relu(data, f"{name}_depthwise_conv1", f"{name}_bn1", epsilon, layout, weight=weight,
                          channels=depthwise_channels, groups=depthwise_channels, kernel_size=kernel_size,
                          strides=strides, padding=padding, kernel_layout=kernel_layout)
    return _conv_bn_relu(conv1, f"{name}_conv2", f"{name}_bn2", epsilon, layout, channels=pointwise_channels,
                         kernel_size=(1, 1), strides=(1, 1), padding=(0, 0))


def mobile_net(
    num_classes: int = 1000,
    data_shape: tuple[int, ...] = (1, 3, 224, 224),
    dtype: str = "float32",
    alpha: float = 1.0,
    is_shallow: bool = False,
    layout: str = "NCHW",
) -> Function:
    """The MobileNet v1 function: ``data`` -> class probabilities."""
    data = var("data", shape=data_shape, dtype=dtype)
    body = conv_block(data, "conv_block_1", int(32 * alpha), strides=(2, 2), layout=layout)
    # (depthwise channels, pointwise channels, downsample) per separable block
    plan = [
        (32, 64, False),
        (64, 128, True),
        (128, 128, False),
        (128, 256, True),
        (256, 256, False),
        (256, 512, True),
    ]
    if is_shallow:
        plan += [(512, 1024, True), (1024, 1024, True)]
    else:
        plan += [(512, 512, False)] * 5 + [(512, 1024, True), (1024, 1024, False)]
    for i, (dw, pw, down) in enumerate(plan, start=1):
        body = separable_conv_block(
            body,
            f"separable_conv_block_{i}",
            int(dw * alpha),
            int(pw * alpha),
            downsample=down,
            layout=layout,
            dtype=dtype,
        )
    flat = batch_flatten(global_avg_pool2d(body, layout=layout))
    fc = bias_add(dense(flat, var("fc_weight"), units=num_classes), var("fc_bias"))
    out = softmax(fc)
    return Function(free_vars(out), out)


def get_workload(
    batch_size: int = 1,
    num_classes: int = 1000,
    image_shape: tuple[int, ...] = (3, 224, 224),
    dtype: str = "float32",
    layout: str = "NCHW",
) -> tuple[IRModule, dict[str, NDArray]]:
    """MobileNet v1 with random weights: ``(mod, params)`` (TVM's ``relay.testing.mobilenet.get_workload``).

    Parameters
    ----------
    batch_size, num_classes : int
    image_shape : tuple of int
        In ``layout`` order without the batch (``(3, 224, 224)`` for NCHW).
    dtype, layout : str

    Returns
    -------
    (IRModule, dict of str to NDArray)
    """
    data_shape = (batch_size, *image_shape)
    return create_workload(mobile_net(num_classes, data_shape, dtype, 1.0, False, layout))
