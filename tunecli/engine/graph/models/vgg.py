"""VGG as in TVM's ``relay.testing.vgg``: ``get_workload(batch_size, num_layers=11|13|16|19)``.

Simonyan and Zisserman, "Very Deep Convolutional Networks".  Layer names follow TVM's
(``conv<stage>_<i>``, ``bn<stage>_<i>``, ``fc6``-``fc8``).
"""

from __future__ import annotations

from tunecli.engine.runtime import NDArray
from tunecli.errors import GraphError

from ..graph_expr import Expr, Function, var
from ..ir_module import IRModule
from ..ops.nn import batch_flatten, dropout, softmax
from ..ops.pool import max_pool2d
from ..ops.unary import relu
from ..traversal import free_vars
from .init import create_workload
from .layers import batch_norm_infer, conv2d_bias, dense_add_bias

#: num_layers -> (convolutions per stage, filters per stage)
VGG_SPEC = {
    11: ([1, 1, 2, 2, 2], [64, 128, 256, 512, 512]),
    13: ([2, 2, 2, 2, 2], [64, 128, 256, 512, 512]),
    16: ([2, 2, 3, 3, 3], [64, 128, 256, 512, 512]),
    19: ([2, 2, 4, 4, 4], [64, 128, 256, 512, 512]),
}


def get_feature(data: Expr, layers: list[int], filters: list[int], batch_norm: bool = False) -> Expr:
    """The convolution stages, each ending in a 2x2 max pool."""
    body = data
    for i, num in enumerate(layers):
        for j in range(num):
            name = f"{i + 1}_{j + 1}"
            body = conv2d_bias(body, f"conv{name}", kernel_size=(3, 3), padding=(1, 1), channels=filters[i])
            if batch_norm:
                body = batch_norm_infer(body, f"bn{name}")
            body = relu(body)
        body = max_pool2d(body, pool_size=(2, 2), strides=(2, 2))
    return body


def get_classifier(data: Expr, num_classes: int) -> Expr:
    """fc6 and fc7 (4096 units, relu, dropout) and fc8."""
    body = batch_flatten(data)
    body = dropout(relu(dense_add_bias(body, "fc6", units=4096)), rate=0.5)
    body = dropout(relu(dense_add_bias(body, "fc7", units=4096)), rate=0.5)
    return dense_add_bias(body, "fc8", units=num_classes)


def get_net(
    batch_size: int,
    image_shape: tuple[int, ...],
    num_classes: int,
    dtype: str,
    num_layers: int = 11,
    batch_norm: bool = False,
) -> Function:
    """The VGG function: ``data`` -> class probabilities."""
    if num_layers not in VGG_SPEC:
        raise GraphError(f"vgg: num_layers {num_layers}; choose from {sorted(VGG_SPEC)}")
    layers, filters = VGG_SPEC[num_layers]
    data = var("data", shape=(batch_size, *image_shape), dtype=dtype)
    out = softmax(get_classifier(get_feature(data, layers, filters, batch_norm), num_classes))
    return Function(free_vars(out), out)


def get_workload(
    batch_size: int,
    num_classes: int = 1000,
    image_shape: tuple[int, ...] = (3, 224, 224),
    dtype: str = "float32",
    num_layers: int = 11,
    batch_norm: bool = False,
) -> tuple[IRModule, dict[str, NDArray]]:
    """VGG with random weights: ``(mod, params)`` (TVM's ``relay.testing.vgg.get_workload``).

    Parameters
    ----------
    batch_size, num_classes : int
    image_shape : tuple of int
        ``(C, H, W)``; H and W are halved five times.
    dtype : str
    num_layers : int
        11, 13, 16 or 19.
    batch_norm : bool
        A batch norm after every convolution.

    Returns
    -------
    (IRModule, dict of str to NDArray)
    """
    return create_workload(
        get_net(batch_size, tuple(image_shape), num_classes, dtype, num_layers, batch_norm)
    )
