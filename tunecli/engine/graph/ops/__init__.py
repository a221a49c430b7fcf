"""The graph operators, by family; importing this package registers every one in ``OPS``."""

from . import broadcast, conv, conv_winograd, nn, pool, reduce, transform, unary

__all__ = ["broadcast", "conv", "conv_winograd", "nn", "pool", "reduce", "transform", "unary"]
