"""TVM's ``tvm.relay.testing.synthetic`` face: a small network of many kinds of layer."""

from tunecli.engine.graph.models.synthetic import get_net, get_workload

__all__ = ["get_net", "get_workload"]
