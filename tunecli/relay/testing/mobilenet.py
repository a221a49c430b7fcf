"""TVM's ``tvm.relay.testing.mobilenet`` face (MobileNet v1)."""

from __future__ import annotations

from tunecli.engine.graph.models import mobilenet as _mobilenet
from tunecli.engine.graph.models.mobilenet import conv_block, mobile_net, separable_conv_block
from tunecli.relay.testing.init import as_ndarrays


def get_workload(
    batch_size: int = 1,
    num_classes: int = 1000,
    image_shape: tuple[int, ...] = (3, 224, 224),
    dtype: str = "float32",
    layout: str = "NCHW",
) -> tuple:
    """MobileNet v1 with random weights: ``(mod, params)``, params as ``tvm.nd`` arrays."""
    return as_ndarrays(_mobilenet.get_workload(batch_size, num_classes, image_shape, dtype, layout))


__all__ = ["conv_block", "get_workload", "mobile_net", "separable_conv_block"]
