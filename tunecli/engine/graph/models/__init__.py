"""The built-in networks of ``relay.testing``: ``<net>.get_workload(...) -> (IRModule, params)``,
params a dict of name -> ``NDArray``."""

from . import init, layers, mobilenet, mobilenet_v2, resnet, squeezenet, vgg

__all__ = ["init", "layers", "mobilenet", "mobilenet_v2", "resnet", "squeezenet", "vgg"]
