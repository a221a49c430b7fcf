"""SqueezeNet 1.0 and 1.1 as in TVM's ``relay.testing.squeezenet``: ``get_workload(version="1.1")``.

Iandola et al., "SqueezeNet".  Layer names follow TVM's (``conv1``, ``fire<i>_input_conv``,
``fire<i>_left_conv``, ``fire<i>_right_conv``, ``conv_final``).
"""

from __future__ import annotations

from tunecli.engine.runtime import NDArray
from tunecli.errors import GraphError

from ..graph_expr import Expr, Function, var
from ..ir_module import IRModule
from ..ops.nn import batch_flatten, dropout, softmax
from ..ops.pool import global_avg_pool2d, max_pool2d
from ..ops.transform import concatenate
from ..ops.unary import relu
from ..traversal import free_vars
from .init import create_workload
from .layers import LayerOption, conv2d_bias


def _conv_relu(data: Expr, name: str, **kwargs: LayerOption) -> Expr:
    """conv ``<name>`` + bias ``<name>_bias`` + relu."""
    return relu(conv2d_bias(data, name, **kwargs))


def _fire_conv(data: Expr, channels: int, kernel_size: int, padding: int, prefix: str) -> Expr:
    size = (kernel_size, kernel_size)
    return _conv_relu(data, f"{prefix}_conv", channels=channels, kernel_size=size, padding=(padding, padding))


def make_fire(
    data: Expr, squeeze_channels: int, expand1x1_channels: int, expand3x3_channels: int, prefix: str
) -> Expr:
    """A fire module: 1x1 squeeze, then 1x1 and 3x3 expansions concatenated on channels."""
    squeezed = _fire_conv(data, squeeze_channels, 1, 0, f"{prefix}_input")
    left = _fire_conv(squeezed, expand1x1_channels, 1, 0, f"{prefix}_left")
    right = _fire_conv(squeezed, expand3x3_channels, 3, 1, f"{prefix}_right")
    return concatenate((left, right), axis=1)


def get_net(
    batch_size: int, image_shape: tuple[int, ...], num_classes: int, version: str, dtype: str
) -> Function:
    """The SqueezeNet function: ``data`` -> class probabilities."""
    if version not in ("1.0", "1.1"):
        raise GraphError(f"squeezenet: version {version!r}; choose '1.0' or '1.1'")
    net: Expr = var("data", shape=(batch_size, *image_shape), dtype=dtype)
    if version == "1.0":
        net = _conv_relu(net, "conv1", channels=96, kernel_size=(7, 7), strides=(2, 2), padding=(3, 3))
        # (squeeze, expand) per fire module; "pool" is a 3x3 max pool with stride 2
        plan = [
            "pool",
            (16, 64),
            (16, 64),
            (32, 128),
            "pool",
            (32, 128),
            (48, 192),
            (48, 192),
            (64, 256),
            "pool",
            (64, 256),
        ]
    else:
        net = _conv_relu(net, "conv1", channels=64, kernel_size=(3, 3), strides=(2, 2), padding=(1, 1))
        plan = [
            "pool",
            (16, 64),
            (16, 64),
            "pool",
            (32, 128),
            (32, 128),
            "pool",
            (48, 192),
            (48, 192),
            (64, 256),
            (64, 256),
        ]
    fire = 0
    for step in plan:
        if step == "pool":
            net = max_pool2d(net, pool_size=(3, 3), strides=(2, 2))
        else:
            fire += 1
            squeeze, expand = step
            net = make_fire(net, squeeze, expand, expand, f"fire{fire}")
    net = dropout(net, rate=0.5)
    net = _conv_relu(net, "conv_final", channels=num_classes, kernel_size=(1, 1))
    out = softmax(batch_flatten(global_avg_pool2d(net)))
    return Function(free_vars(out), out)


def get_workload(
    batch_size: int = 1,
    num_classes: int = 1000,
    version: str = "1.0",
    image_shape: tuple[int, ...] = (3, 224, 224),
    dtype: str = "float32",
) -> tuple[IRModule, dict[str, NDArray]]:
    """SqueezeNet with random weights: ``(mod, params)`` (TVM's ``relay.testing.squeezenet.get_workload``).

    Parameters
    ----------
    batch_size, num_classes : int
    version : str
        ``"1.0"`` or ``"1.1"``.
    image_shape : tuple of int
        ``(C, H, W)``.
    dtype : str

    Returns
    -------
    (IRModule, dict of str to NDArray)
    """
    return create_workload(get_net(batch_size, tuple(image_shape), num_classes, version, dtype))
