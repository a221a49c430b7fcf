"""TVM's ``tvm.contrib.graph_executor`` face: ``GraphModule`` and ``create``."""

from typing import Any

from tunecli.engine.runtime.graph_executor import GraphModule
from tunecli.engine.runtime.graph_library import executor_for


def create(graph_json_str: str, libmod: Any, device: Any = None) -> GraphModule:
    """A GraphModule of ``graph_json_str`` running the kernels of ``libmod``: a built or loaded
    library (``relay.build(...)``, ``runtime.load_module(path)``), or ``lib.get_lib()`` with the
    parameters then set by ``set_input(**lib.get_params())``."""
    return GraphModule(executor_for(graph_json_str, libmod, device))


__all__ = ["GraphModule", "create"]
