"""TVM's ``tvm.contrib.graph_executor`` face: ``GraphModule`` and ``create``."""

from typing import Any

from tunecli.engine.runtime.graph_executor import GraphExecutor, GraphModule


def create(graph_json_str: str, libmod: Any, device: Any = None) -> GraphModule:
    """A GraphModule of ``graph_json_str`` running the kernels of ``libmod`` (a built or loaded
    library: ``relay.build(...)`` or ``runtime.load_module(path)``)."""
    return GraphModule(GraphExecutor(graph_json_str, libmod.loaded_kernels(), libmod.get_params()))


__all__ = ["GraphModule", "create"]
