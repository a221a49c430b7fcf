"""A multilayer perceptron (``relay.testing.mlp``): a flattened image through dense layers of 128
and 64 units (bias, relu) to ``num_classes`` scores and their softmax.  ``get_workload(batch_size,
num_classes, image_shape, dtype)`` gives ``(IRModule, params)``."""

from __future__ import annotations

import math

from tunecli.engine.runtime import NDArray

from ..graph_expr import Expr, Function, var
from ..ir_module import IRModule
from ..ops.nn import batch_flatten, bias_add, dense, softmax
from ..ops.unary import relu
from ..traversal import free_vars
from .init import create_workload

#: Units of the hidden layers, first to last.
HIDDEN_UNITS = (128, 64)


def _layer(x: Expr, width: int, units: int, name: str, dtype: str) -> Expr:
    weight = var(f"{name}_weight", shape=(units, width), dtype=dtype)
    return bias_add(dense(x, weight, units=units), var(f"{name}_bias", shape=(units,), dtype=dtype), axis=-1)


def get_net(batch_size: int, num_classes: int = 10, image_shape: tuple[int, ...] = (1, 28, 28),
            dtype: str = "float32") -> Function:
    """The network on ``batch_size`` images of ``image_shape``."""
    data = var("data", shape=(int(batch_size), *(int(s) for s in image_shape)), dtype=dtype)
    x, width = batch_flatten(data), math.prod(int(s) for s in image_shape)
    for n, units in enumerate(HIDDEN_UNITS, start=1):
        x, width = relu(_layer(x, width, units, f"fc{n}", dtype)), units
    scores = _layer(x, width, int(num_classes), f"fc{len(HIDDEN_UNITS) + 1}", dtype)
    out = softmax(scores)
    return Function(free_vars(out), out)


def get_workload(batch_size: int = 1, num_classes: int = 10, image_shape: tuple[int, ...] = (1, 28, 28),
                 dtype: str = "float32", **_: object) -> tuple[IRModule, dict[str, NDArray]]:
    """``(IRModule, params)`` of :func:`get_net` with seeded random weights."""
    return create_workload(get_net(batch_size, num_classes, image_shape, dtype))
