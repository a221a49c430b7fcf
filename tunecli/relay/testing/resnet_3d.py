"""TVM's ``tvm.relay.testing.resnet_3d`` face (3-D ResNet, NCDHW)."""

from tunecli.engine.graph.models.resnet_3d import get_net, get_workload, residual_unit, resnet

__all__ = ["get_net", "get_workload", "residual_unit", "resnet"]
