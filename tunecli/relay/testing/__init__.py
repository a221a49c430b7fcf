"""TVM's ``tvm.relay.testing`` face: built-in networks with random weights, ``(mod, params)``."""

from tunecli.relay.testing import init, resnet
from tunecli.relay.testing.init import create_workload

__all__ = ["create_workload", "init", "resnet"]
