"""``relay.testing.bert``: the built-in transformer with random weights, as the CNNs of TVM's
``tvm.relay.testing`` (``get_workload(batch_size=, ..., dtype=) -> (mod, params)``)."""

from tunecli.engine.graph.models.bert import bert, get_workload

__all__ = ["bert", "get_workload"]
