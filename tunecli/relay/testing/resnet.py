"""TVM's ``tvm.relay.testing.resnet`` face."""

from tunecli.engine.graph.models.resnet import get_net, get_workload, residual_unit, resnet

__all__ = ["get_net", "get_workload", "residual_unit", "resnet"]
