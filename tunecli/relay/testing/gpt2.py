"""``relay.testing.gpt2``: the built-in transformer with random weights, as the CNNs of TVM's
``tvm.relay.testing`` (``get_workload(batch_size=, ..., dtype=) -> (mod, params)``)."""

from tunecli.engine.graph.models.gpt2 import get_workload, gpt2

__all__ = ["gpt2", "get_workload"]
