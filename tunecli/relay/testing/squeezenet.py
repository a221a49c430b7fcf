"""TVM's ``tvm.relay.testing.squeezenet`` face."""

from tunecli.engine.graph.models.squeezenet import get_net, get_workload, make_fire

__all__ = ["get_net", "get_workload", "make_fire"]
