"""3-D ResNet for video clips as in TVM's ``relay.testing.resnet_3d``: ``get_workload(num_layers=18)``.

The pre-activation ResNet of :mod:`.resnet` with every convolution 3-D (NCDHW, OIDHW): a clip of
``image_shape = (C, D, H, W)`` (default ``(3, 16, 112, 112)``); for large frames a ``3x7x7`` first
convolution of strides ``(1, 2, 2)`` and no max pooling, then stages whose first unit halves
depth, height and width.  Layer names are TVM's, so the extracted ``conv3d_ncdhw.x86`` tasks are
those of TVM's network.
"""

from __future__ import annotations

from tunecli.engine.runtime import NDArray
from tunecli.errors import GraphError

from ..graph_expr import Expr, Function, var
from ..ir_module import IRModule
from ..ops.conv3d import global_avg_pool3d
from ..ops.unary import relu
from ..traversal import free_vars
from .init import create_workload
from .layers import batch_norm_infer, conv3d, pooled_classifier
from .resnet import cube_conv, pre_activation_unit, residual_stages, stage_plan

#: The unit convolutions: cubic kernels in NCDHW.
_UNIT_CONV = cube_conv(conv3d, 3)


def residual_unit(
    data: Expr,
    num_filter: int,
    stride: tuple[int, ...],
    dim_match: bool,
    name: str,
    bottle_neck: bool = True,
) -> Expr:
    """One pre-activation 3-D residual unit (basic: two 3x3x3 convs; bottleneck: 1x1x1, 3x3x3,
    1x1x1 with a quarter of the filters); ``dim_match=False`` adds the 1x1x1 shortcut ``<name>_sc``."""
    return pre_activation_unit(data, num_filter, stride, dim_match, name, bottle_neck, _UNIT_CONV)


def resnet(
    units: list[int],
    num_stages: int,
    filter_list: list[int],
    num_classes: int,
    data_shape: tuple[int, ...],
    bottle_neck: bool = True,
    dtype: str = "float32",
) -> Function:
    """The 3-D ResNet function: ``data [N, C, D, H, W]`` -> class probabilities."""
    if len(units) != num_stages:
        raise GraphError(f"resnet_3d: {len(units)} unit counts for {num_stages} stages")
    data = var("data", shape=data_shape, dtype=dtype)
    body = batch_norm_infer(data, "bn_data", epsilon=2e-5, scale=False)
    if data_shape[3] <= 32:  # small frames
        body = conv3d(body, "conv0", channels=filter_list[0], kernel_size=(3, 3, 3), padding=(1, 1, 1))
    else:
        body = conv3d(
            body,
            "conv0",
            channels=filter_list[0],
            kernel_size=(3, 7, 7),
            strides=(1, 2, 2),
            padding=(1, 3, 3),
        )
        body = relu(batch_norm_infer(body, "bn0", epsilon=2e-5))

    def unit(x: Expr, num_filter: int, stride: tuple[int, ...], dim_match: bool, name: str) -> Expr:
        return residual_unit(x, num_filter, stride, dim_match, name, bottle_neck)

    body = residual_stages(body, units, filter_list, unit, 3)
    body = relu(batch_norm_infer(body, "bn1", epsilon=2e-5))
    net = pooled_classifier(global_avg_pool3d(body), "fc1", num_classes)
    return Function(free_vars(net), net)


def get_net(
    batch_size: int,
    num_classes: int,
    num_layers: int = 50,
    image_shape: tuple[int, ...] = (3, 16, 112, 112),
    layout: str = "NCDHW",
    dtype: str = "float32",
    **kwargs: object,
) -> Function:
    """The 3-D ResNet function for ``num_layers`` (CIFAR-like variants for frames of height <= 28)."""
    if layout != "NCDHW":
        raise GraphError(f"resnet_3d: layout {layout!r}; only NCDHW is supported")
    units, filter_list, bottle_neck = stage_plan("resnet_3d", num_layers, image_shape[2])
    return resnet(units, len(units), filter_list, num_classes, (batch_size, *image_shape), bottle_neck, dtype)


def get_workload(
    batch_size: int = 1,
    num_classes: int = 1000,
    num_layers: int = 18,
    image_shape: tuple[int, ...] = (3, 16, 112, 112),
    layout: str = "NCDHW",
    dtype: str = "float32",
    **kwargs: object,
) -> tuple[IRModule, dict[str, NDArray]]:
    """3-D ResNet with random weights: ``(mod, params)`` (TVM's ``relay.testing.resnet_3d.get_workload``).

    Parameters
    ----------
    batch_size, num_classes, num_layers : int
    image_shape : tuple of int
        ``(C, D, H, W)``.
    layout : str
        ``"NCDHW"``.
    dtype : str

    Returns
    -------
    (IRModule, dict of str to NDArray)
    """
    return create_workload(get_net(batch_size, num_classes, num_layers, tuple(image_shape), layout, dtype))
