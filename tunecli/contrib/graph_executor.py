"""TVM's ``tvm.contrib.graph_executor`` face: ``GraphModule`` and ``create``."""

from collections.abc import Mapping

from tunecli.engine.rpc.remote_objects import RemoteModule
from tunecli.engine.runtime.device import Device
from tunecli.engine.runtime.graph_executor import GraphModule
from tunecli.engine.runtime.graph_library import GraphLibrary, executor_for
from tunecli.engine.runtime.module import Module


def create(graph_json_str: str, libmod: GraphLibrary | Mapping[str, Module] | RemoteModule,
           device: Device | None = None) -> GraphModule:
    """A GraphModule of ``graph_json_str`` running the kernels of ``libmod``: a built or loaded
    library (``relay.build(...)``, ``runtime.load_module(path)``), ``lib.get_lib()`` with the
    parameters then set by ``set_input(**lib.get_params())``, or a library loaded on a device
    server (``remote.load_module(name)``, with a device of its session)."""
    if isinstance(libmod, RemoteModule):
        return libmod.graph_module(graph_json_str, device)  # type: ignore[arg-type]
    return GraphModule(executor_for(graph_json_str, libmod, device))


__all__ = ["GraphModule", "create"]
