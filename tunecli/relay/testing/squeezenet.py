"""TVM's ``tvm.relay.testing.squeezenet`` face."""

from __future__ import annotations

from tunecli.engine.graph.models import squeezenet as _squeezenet
from tunecli.engine.graph.models.squeezenet import get_net
from tunecli.relay.testing.init import as_ndarrays


def get_workload(
    batch_size: int = 1,
    num_classes: int = 1000,
    version: str = "1.0",
    image_shape: tuple[int, ...] = (3, 224, 224),
    dtype: str = "float32",
) -> tuple:
    """SqueezeNet with random weights: ``(mod, params)``, params as ``tvm.nd`` arrays."""
    return as_ndarrays(_squeezenet.get_workload(batch_size, num_classes, version, image_shape, dtype))


__all__ = ["get_net", "get_workload"]
