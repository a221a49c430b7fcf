"""TVM's ``tvm.relay.transform`` face: the graph passes."""

from tunecli.engine.graph.type_infer import InferType

__all__ = ["InferType"]
