"""TVM's ``tvm.relay.testing.dcgan`` face (the DCGAN generator)."""

from tunecli.engine.graph.models.dcgan import deconv2d, deconv2d_bn_relu, get_net, get_workload

__all__ = ["deconv2d", "deconv2d_bn_relu", "get_net", "get_workload"]
