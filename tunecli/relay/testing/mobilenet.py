"""TVM's ``tvm.relay.testing.mobilenet`` face (MobileNet v1)."""

from tunecli.engine.graph.models.mobilenet import conv_block, get_workload, mobile_net, separable_conv_block

__all__ = ["conv_block", "get_workload", "mobile_net", "separable_conv_block"]
