"""TVM's ``tvm.relay.testing`` face: built-in networks with random weights, ``(mod, params)`` with
the parameters as ``tvm.nd`` arrays (:class:`tunecli.runtime.NDArray`); besides TVM's CNNs, the
transformers ``bert``, ``gpt2`` and ``vit``."""

from tunecli.relay.testing import (
    bert,
    gpt2,
    init,
    mobilenet,
    mobilenet_v2,
    resnet,
    squeezenet,
    synthetic,
    vgg,
    vit,
)
from tunecli.relay.testing.init import create_workload

__all__ = ["bert", "create_workload", "gpt2", "init", "mobilenet", "mobilenet_v2", "resnet", "squeezenet",
           "synthetic", "vgg", "vit"]
