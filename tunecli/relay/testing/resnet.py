"""TVM's ``tvm.relay.testing.resnet`` face."""

from tunecli.engine.graph.models import resnet as _resnet
from tunecli.engine.graph.models.resnet import get_net, residual_unit, resnet
from tunecli.relay.testing.init import with_ndarray_params

get_workload = with_ndarray_params(_resnet.get_workload)

__all__ = ["get_net", "get_workload", "residual_unit", "resnet"]
