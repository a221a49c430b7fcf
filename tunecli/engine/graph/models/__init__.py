"""The built-in networks of ``relay.testing``: ``<net>.get_workload(...) -> (IRModule, params)``,
params a dict of name -> ``NDArray``; the CNNs (the 3-D ``resnet_3d``, the DCGAN generator
``dcgan``, EfficientNet-B0 ``efficientnet``) and the transformers ``bert``, ``gpt2`` and ``vit``."""

from . import (
    bert,
    dcgan,
    efficientnet,
    gpt2,
    init,
    layers,
    mobilenet,
    mobilenet_v2,
    resnet,
    resnet_3d,
    squeezenet,
    transformer,
    vgg,
    vit,
)

__all__ = [
    "bert", "dcgan", "efficientnet", "gpt2", "init", "layers", "mobilenet", "mobilenet_v2", "resnet",
    "resnet_3d", "squeezenet", "transformer", "vgg", "vit",
]
