"""TVM's ``tvm.relay.testing.init`` face: ``create_workload`` and ``Xavier``."""

from tunecli.engine.graph.models.init import Xavier, create_workload

__all__ = ["Xavier", "create_workload"]
