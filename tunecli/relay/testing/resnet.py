"""TVM's ``tvm.relay.testing.resnet`` face."""

from __future__ import annotations

from typing import Any

from tunecli.engine.graph.models import resnet as _resnet
from tunecli.engine.graph.models.resnet import get_net, residual_unit, resnet
from tunecli.relay.testing.init import as_ndarrays


def get_workload(
    batch_size: int = 1,
    num_classes: int = 1000,
    num_layers: int = 18,
    image_shape: tuple[int, ...] = (3, 224, 224),
    layout: str = "NCHW",
    dtype: str = "float32",
    **kwargs: Any,
) -> tuple:
    """ResNet with random weights: ``(mod, params)``, params as ``tvm.nd`` arrays."""
    return as_ndarrays(
        _resnet.get_workload(batch_size, num_classes, num_layers, image_shape, layout, dtype, **kwargs)
    )


__all__ = ["get_net", "get_workload", "residual_unit", "resnet"]
