"""TVM's ``tvm.relay.testing.squeezenet`` face."""

from tunecli.engine.graph.models import squeezenet as _squeezenet
from tunecli.engine.graph.models.squeezenet import get_net, make_fire
from tunecli.relay.testing.init import with_ndarray_params

get_workload = with_ndarray_params(_squeezenet.get_workload)

__all__ = ["get_net", "get_workload", "make_fire"]
