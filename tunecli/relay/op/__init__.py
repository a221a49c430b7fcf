"""TVM's ``tvm.relay.op`` face: ``get(name)``, ``OpPattern`` and the operator constructors (listed
once, in ``tensor``, ``reduce``, ``transform`` and ``nn``)."""

from tunecli.engine.graph.op_registry import OPS, Op, OpPattern
from tunecli.relay.op import nn, reduce, tensor, transform
from tunecli.relay.op.reduce import *  # noqa: F403
from tunecli.relay.op.tensor import *  # noqa: F403
from tunecli.relay.op.transform import *  # noqa: F403

get = OPS.get

__all__ = ["Op", "OpPattern", "get", "nn", *tensor.__all__, *reduce.__all__, *transform.__all__]
