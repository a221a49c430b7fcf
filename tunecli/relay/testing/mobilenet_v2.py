"""MobileNet v2 (``relay.testing.mobilenet_v2``, a tunecli addition with TVM's workload signature)."""

from tunecli.engine.graph.models.mobilenet_v2 import get_workload, inverted_residual, mobilenet_v2

__all__ = ["get_workload", "inverted_residual", "mobilenet_v2"]
