"""TVM's ``tvm.relay.testing`` face: built-in networks with random weights, ``(mod, params)`` with
the parameters as ``tvm.nd`` arrays (:class:`tunecli.runtime.NDArray`)."""

from tunecli.relay.testing import init, mobilenet, mobilenet_v2, resnet, squeezenet, synthetic, vgg
from tunecli.relay.testing.init import create_workload

__all__ = ["create_workload", "init", "mobilenet", "mobilenet_v2", "resnet", "squeezenet", "synthetic", "vgg"]
