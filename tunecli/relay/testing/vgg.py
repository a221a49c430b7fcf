"""TVM's ``tvm.relay.testing.vgg`` face."""

from tunecli.engine.graph.models import vgg as _vgg
from tunecli.engine.graph.models.vgg import get_classifier, get_feature, get_net
from tunecli.relay.testing.init import with_ndarray_params

get_workload = with_ndarray_params(_vgg.get_workload)

__all__ = ["get_classifier", "get_feature", "get_net", "get_workload"]
