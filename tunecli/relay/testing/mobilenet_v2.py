"""MobileNet v2 (``relay.testing.mobilenet_v2``, a tunecli addition with TVM's workload signature)."""

from __future__ import annotations

from tunecli.engine.graph.models import mobilenet_v2 as _mobilenet_v2
from tunecli.engine.graph.models.mobilenet_v2 import inverted_residual, mobilenet_v2
from tunecli.relay.testing.init import as_ndarrays


def get_workload(
    batch_size: int = 1,
    num_classes: int = 1000,
    image_shape: tuple[int, ...] = (3, 224, 224),
    dtype: str = "float32",
    multiplier: float = 1.0,
) -> tuple:
    """MobileNet v2 with random weights: ``(mod, params)``, params as ``tvm.nd`` arrays."""
    return as_ndarrays(_mobilenet_v2.get_workload(batch_size, num_classes, image_shape, dtype, multiplier))


__all__ = ["get_workload", "inverted_residual", "mobilenet_v2"]
