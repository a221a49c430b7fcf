"""TVM's ``tvm.relay.testing`` face: built-in networks with random weights, ``(mod, params)`` with
the parameters as ``tvm.nd`` arrays (:class:`tunecli.runtime.NDArray`); besides TVM's ``mlp`` and
CNNs (the 3-D ``resnet_3d`` and the ``dcgan`` generator among them), the transformers ``bert``,
``gpt2`` and ``vit``."""

from tunecli.relay.testing import (
    bert,
    dcgan,
    gpt2,
    init,
    mlp,
    mobilenet,
    mobilenet_v2,
    resnet,
    resnet_3d,
    squeezenet,
    synthetic,
    vgg,
    vit,
)
from tunecli.relay.testing.init import create_workload

__all__ = ["bert", "create_workload", "dcgan", "gpt2", "init", "mlp", "mobilenet", "mobilenet_v2", "resnet",
           "resnet_3d", "squeezenet", "synthetic", "vgg", "vit"]
