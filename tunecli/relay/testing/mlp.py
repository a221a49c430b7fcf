"""TVM's ``tvm.relay.testing.mlp`` face: a multilayer perceptron."""

from tunecli.engine.graph.models.mlp import get_net, get_workload

__all__ = ["get_net", "get_workload"]
