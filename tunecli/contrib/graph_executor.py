"""TVM's ``tvm.contrib.graph_executor`` face: ``GraphModule`` and ``create``."""

from collections.abc import Mapping

from tunecli.engine.runtime.device import Device
from tunecli.engine.runtime.graph_executor import GraphModule
from tunecli.engine.runtime.graph_library import GraphLibrary, executor_for
from tunecli.engine.runtime.module import Module


def create(graph_json_str: str, libmod: GraphLibrary | Mapping[str, Module],
           device: Device | None = None) -> GraphModule:
    """A GraphModule of ``graph_json_str`` running the kernels of ``libmod``: a built or loaded
    library (``relay.build(...)``, ``runtime.load_module(path)``), or ``lib.get_lib()`` with the
    parameters then set by ``set_input(**lib.get_params())``."""
    return GraphModule(executor_for(graph_json_str, libmod, device))


__all__ = ["GraphModule", "create"]
