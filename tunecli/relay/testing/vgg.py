"""TVM's ``tvm.relay.testing.vgg`` face."""

from __future__ import annotations

from tunecli.engine.graph.models import vgg as _vgg
from tunecli.engine.graph.models.vgg import get_classifier, get_feature, get_net
from tunecli.relay.testing.init import as_ndarrays


def get_workload(
    batch_size: int,
    num_classes: int = 1000,
    image_shape: tuple[int, ...] = (3, 224, 224),
    dtype: str = "float32",
    num_layers: int = 11,
    batch_norm: bool = False,
) -> tuple:
    """VGG with random weights: ``(mod, params)``, params as ``tvm.nd`` arrays."""
    return as_ndarrays(_vgg.get_workload(batch_size, num_classes, image_shape, dtype, num_layers, batch_norm))


__all__ = ["get_classifier", "get_feature", "get_net", "get_workload"]
