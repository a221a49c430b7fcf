"""``relay.testing.vit``: the built-in transformer with random weights, as the CNNs of TVM's
``tvm.relay.testing`` (``get_workload(batch_size=, ..., dtype=) -> (mod, params)``)."""

from tunecli.engine.graph.models.vit import get_workload, vit

__all__ = ["vit", "get_workload"]
