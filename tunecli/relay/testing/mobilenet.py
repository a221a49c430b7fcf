"""TVM's ``tvm.relay.testing.mobilenet`` face (MobileNet v1)."""

from tunecli.engine.graph.models import mobilenet as _mobilenet
from tunecli.engine.graph.models.mobilenet import conv_block, mobile_net, separable_conv_block
from tunecli.relay.testing.init import with_ndarray_params

get_workload = with_ndarray_params(_mobilenet.get_workload)

__all__ = ["conv_block", "get_workload", "mobile_net", "separable_conv_block"]
