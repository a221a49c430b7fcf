"""The built-in networks of ``relay.testing``: ``<net>.get_workload(...) -> (IRModule, params)``,
params a dict of name -> ``NDArray``; the CNNs and the transformers ``bert``, ``gpt2`` and ``vit``."""

from . import bert, gpt2, init, layers, mobilenet, mobilenet_v2, resnet, squeezenet, transformer, vgg, vit

__all__ = [
    "bert", "gpt2", "init", "layers", "mobilenet", "mobilenet_v2", "resnet", "squeezenet", "transformer",
    "vgg",
    "vit",
]
