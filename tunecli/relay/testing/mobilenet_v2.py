"""MobileNet v2 (``relay.testing.mobilenet_v2``, a tunecli addition with TVM's workload signature)."""

from tunecli.engine.graph.models import mobilenet_v2 as _mobilenet_v2
from tunecli.engine.graph.models.mobilenet_v2 import inverted_residual, mobilenet_v2
from tunecli.relay.testing.init import with_ndarray_params

get_workload = with_ndarray_params(_mobilenet_v2.get_workload)

__all__ = ["get_workload", "inverted_residual", "mobilenet_v2"]
