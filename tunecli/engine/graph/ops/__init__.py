"""The graph operators, by family; importing this package registers every one in ``OPS``."""

from . import (
    broadcast,
    conv,
    conv3d,
    conv_transpose,
    conv_winograd,
    layer_norm,
    nn,
    pool,
    reduce,
    replicate,
    resize,
    selection,
    slicing,
    transform,
    unary,
)

__all__ = [
    "broadcast", "conv", "conv_transpose", "conv_winograd", "conv3d", "layer_norm", "nn", "pool", "reduce",
    "replicate", "resize", "selection", "slicing", "transform", "unary",
]
