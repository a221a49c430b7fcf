"""TVM's ``tvm.relay.build_module`` face: ``build`` and ``optimize``."""

from tunecli.engine.graph.build_module import BuiltGraph, build, optimize

__all__ = ["BuiltGraph", "build", "optimize"]
