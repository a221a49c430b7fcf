"""TVM's ``tvm.relay.build_module`` face: ``build``, ``optimize`` and ``bind_params_by_name``."""

from tunecli.engine.graph.build_module import BuiltGraph, build, optimize
from tunecli.engine.graph.passes.fold_constant import bind_params as bind_params_by_name

__all__ = ["BuiltGraph", "bind_params_by_name", "build", "optimize"]
