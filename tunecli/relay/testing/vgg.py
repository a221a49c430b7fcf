"""TVM's ``tvm.relay.testing.vgg`` face."""

from tunecli.engine.graph.models.vgg import get_classifier, get_feature, get_net, get_workload

__all__ = ["get_classifier", "get_feature", "get_net", "get_workload"]
