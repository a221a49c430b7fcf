"""ResNet v2 (pre-activation) as in TVM's ``relay.testing.resnet``: ``get_workload(num_layers=18)``.

He et al., "Identity Mappings in Deep Residual Networks".  Layer names follow TVM's
(``bn_data``, ``conv0``, ``stage1_unit1_conv1``, ``stage1_unit1_sc``, ``fc1``), so the parameters
and the extracted tasks of a tunecli ResNet are those of TVM's.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeAlias

from tunecli.engine.runtime import NDArray
from tunecli.errors import GraphError

from ..graph_expr import Expr, Function, var
from ..ir_module import IRModule
from ..ops.broadcast import add
from ..ops.pool import global_avg_pool2d, max_pool2d
from ..ops.unary import relu
from ..traversal import free_vars
from .init import create_workload
from .layers import LayerOption, batch_norm_infer, conv2d, pooled_classifier

_UNITS = {
    18: [2, 2, 2, 2],
    34: [3, 4, 6, 3],
    50: [3, 4, 6, 3],
    101: [3, 4, 23, 3],
    152: [3, 8, 36, 3],
    200: [3, 24, 36, 3],
    269: [3, 30, 48, 8],
}


#: A convolution layer of a residual network: ``(data, name, channels, kernel, strides, padding)``
#: with a cubic ``kernel`` and the same ``padding`` on every side; ``padding`` None pads nothing.
ConvLayer: TypeAlias = Callable[[Expr, str, int, int, tuple[int, ...], int | None], Expr]
#: A residual unit of a stage: ``(data, num_filter, stride, dim_match, name)``.
UnitLayer: TypeAlias = Callable[[Expr, int, tuple[int, ...], bool, str], Expr]


def pre_activation_unit(
    data: Expr,
    num_filter: int,
    stride: tuple[int, ...],
    dim_match: bool,
    name: str,
    bottle_neck: bool,
    conv: ConvLayer,
    axis: int = 1,
) -> Expr:
    """One pre-activation residual unit of ``conv`` layers (the channel axis ``axis``): batch norm
    ``<name>_bn<i>`` and relu before each conv ``<name>_conv<i>`` of :func:`unit_convs`; the input
    added, or with ``dim_match=False`` the 1-wide shortcut conv ``<name>_sc`` of the first
    activation."""
    act1 = relu(batch_norm_infer(data, f"{name}_bn1", epsilon=2e-5, axis=axis))
    body = act1
    convs = unit_convs(num_filter, stride, bottle_neck)
    for i, (channels, kernel, strides, pad) in enumerate(convs, start=1):
        if i > 1:
            body = relu(batch_norm_infer(body, f"{name}_bn{i}", epsilon=2e-5, axis=axis))
        body = conv(body, f"{name}_conv{i}", channels, kernel, strides, pad)
    shortcut = data if dim_match else conv(act1, f"{name}_sc", num_filter, 1, stride, None)
    return add(body, shortcut)


def cube_conv(layer: Callable[..., Expr], ndim: int, **options: LayerOption) -> ConvLayer:
    """The :data:`ConvLayer` of the ``ndim``-dimensional layer helper ``layer`` (:func:`.layers.conv2d`,
    :func:`.layers.conv3d`) with the further ``options`` (layouts)."""

    def conv(
        x: Expr, name: str, channels: int, kernel: int, strides: tuple[int, ...], pad: int | None
    ) -> Expr:
        padding = {} if pad is None else {"padding": (pad,) * ndim}
        return layer(x, name, channels=channels, kernel_size=(kernel,) * ndim, strides=strides, **options,
                     **padding)

    return conv


def residual_unit(
    data: Expr,
    num_filter: int,
    stride: tuple[int, ...],
    dim_match: bool,
    name: str,
    bottle_neck: bool = True,
    data_layout: str = "NCHW",
    kernel_layout: str = "OIHW",
) -> Expr:
    """One pre-activation residual unit (basic: two 3x3 convs; bottleneck: 1x1, 3x3, 1x1 with a
    quarter of the filters); ``dim_match=False`` adds the 1x1 shortcut conv ``<name>_sc``."""
    conv = cube_conv(conv2d, 2, data_layout=data_layout, kernel_layout=kernel_layout)
    return pre_activation_unit(data, num_filter, stride, dim_match, name, bottle_neck, conv,
                               data_layout.index("C"))


def unit_convs(num_filter: int, stride: tuple[int, ...],
               bottle_neck: bool) -> list[tuple[int, int, tuple[int, ...], int]]:
    """``(channels, kernel, strides, padding)`` of a residual unit's convs ``<name>_conv1``, ``_conv2``,
    ...: basic, two 3-wide; bottleneck, 1, 3, 1 wide with a quarter of the filters in the first two.
    Only the first conv takes ``stride``; the others step by 1 in each of its dimensions."""
    ones = (1,) * len(stride)
    if bottle_neck:
        quarter = int(num_filter * 0.25)
        return [(quarter, 1, stride, 0), (quarter, 3, ones, 1), (num_filter, 1, ones, 0)]
    return [(num_filter, 3, stride, 1), (num_filter, 3, ones, 1)]


def residual_stages(body: Expr, units: list[int], filter_list: list[int], unit: UnitLayer, ndim: int) -> Expr:
    """Stage ``i`` (from 1) of ``units[i - 1]`` units ``stage<i>_unit<j>`` of ``filter_list[i]``
    filters; the first unit of each stage has a shortcut conv and, after the first stage, steps
    by 2 in each of the ``ndim`` dimensions."""
    for i, count in enumerate(units):
        stride = (1,) * ndim if i == 0 else (2,) * ndim
        body = unit(body, filter_list[i + 1], stride, False, f"stage{i + 1}_unit1")
        for j in range(count - 1):
            body = unit(body, filter_list[i + 1], (1,) * ndim, True, f"stage{i + 1}_unit{j + 2}")
    return body


def resnet(
    units: list[int],
    num_stages: int,
    filter_list: list[int],
    num_classes: int,
    data_shape: tuple[int, ...],
    bottle_neck: bool = True,
    layout: str = "NCHW",
    dtype: str = "float32",
) -> Function:
    """The ResNet function: ``data`` -> class probabilities."""
    if len(units) != num_stages:
        raise GraphError(f"resnet: {len(units)} unit counts for {num_stages} stages")
    kernel_layout = "OIHW" if layout == "NCHW" else "HWIO"
    lay = {"data_layout": layout, "kernel_layout": kernel_layout}
    axis = layout.index("C")
    data = var("data", shape=data_shape, dtype=dtype)
    body = batch_norm_infer(data, "bn_data", epsilon=2e-5, axis=axis, scale=False)
    height = data_shape[layout.index("H")]
    if height <= 32:  # CIFAR-sized input
        body = conv2d(
            body, "conv0", channels=filter_list[0], kernel_size=(3, 3), strides=(1, 1), padding=(1, 1), **lay
        )
    else:
        body = conv2d(
            body, "conv0", channels=filter_list[0], kernel_size=(7, 7), strides=(2, 2), padding=(3, 3), **lay
        )
        body = relu(batch_norm_infer(body, "bn0", epsilon=2e-5, axis=axis))
        body = max_pool2d(body, pool_size=(3, 3), strides=(2, 2), padding=(1, 1), layout=layout)

    def unit(x: Expr, num_filter: int, stride: tuple[int, ...], dim_match: bool, name: str) -> Expr:
        return residual_unit(x, num_filter, stride, dim_match, name, bottle_neck, layout, kernel_layout)

    body = residual_stages(body, units, filter_list, unit, 2)
    body = relu(batch_norm_infer(body, "bn1", epsilon=2e-5, axis=axis))
    net = pooled_classifier(global_avg_pool2d(body, layout=layout), "fc1", num_classes)
    return Function(free_vars(net), net)


def get_net(
    batch_size: int,
    num_classes: int,
    num_layers: int = 50,
    image_shape: tuple[int, ...] = (3, 224, 224),
    layout: str = "NCHW",
    dtype: str = "float32",
    **kwargs: object,
) -> Function:
    """The ResNet function for ``num_layers`` (CIFAR variants for images of height <= 28)."""
    height = image_shape[0] if layout == "NHWC" else image_shape[1]
    units, filter_list, bottle_neck = stage_plan("resnet", num_layers, height)
    data_shape = (batch_size, *image_shape)
    return resnet(units, len(units), filter_list, num_classes, data_shape, bottle_neck, layout, dtype)


def stage_plan(model: str, num_layers: int, height: int) -> tuple[list[int], list[int], bool]:
    """``(units per stage, filters of the stem and each stage, bottleneck units)`` of a
    ``num_layers`` ResNet on images of ``height`` (three CIFAR-sized stages up to 28 rows).

    Raises
    ------
    GraphError
        Naming ``model`` when no such variant exists.
    """
    if height <= 28:
        if (num_layers - 2) % 9 == 0 and num_layers >= 164:
            return [(num_layers - 2) // 9] * 3, [16, 64, 128, 256], True
        if (num_layers - 2) % 6 == 0 and num_layers < 164:
            return [(num_layers - 2) // 6] * 3, [16, 16, 32, 64], False
        raise GraphError(f"{model}: no {num_layers}-layer variant for images of height {height}")
    if num_layers not in _UNITS:
        raise GraphError(f"{model}: num_layers {num_layers}; choose from {sorted(_UNITS)}")
    bottle_neck = num_layers >= 50
    filters = [64, 256, 512, 1024, 2048] if bottle_neck else [64, 64, 128, 256, 512]
    return _UNITS[num_layers], filters, bottle_neck


def get_workload(
    batch_size: int = 1,
    num_classes: int = 1000,
    num_layers: int = 18,
    image_shape: tuple[int, ...] = (3, 224, 224),
    layout: str = "NCHW",
    dtype: str = "float32",
    **kwargs: object,
) -> tuple[IRModule, dict[str, NDArray]]:
    """ResNet with random weights: ``(mod, params)`` (TVM's ``relay.testing.resnet.get_workload``).

    Parameters
    ----------
    batch_size, num_classes, num_layers : int
        ``num_layers`` 18, 34, 50, 101, 152, 200 or 269 (CIFAR sizes for images of height <= 28).
    image_shape : tuple of int
        ``(C, H, W)`` (``(H, W, C)`` with layout ``"NHWC"``).
    layout : str
    dtype : str

    Returns
    -------
    (IRModule, dict of str to NDArray)
    """
    net = get_net(batch_size, num_classes, num_layers, tuple(image_shape), layout, dtype, **kwargs)
    return create_workload(net)
