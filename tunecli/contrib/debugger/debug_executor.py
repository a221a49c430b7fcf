"""TVM's ``tvm.contrib.debugger.debug_executor`` face: ``create`` and ``GraphModuleDebug``
(see :mod:`tunecli.engine.runtime.debug_executor`)."""

import os
from collections.abc import Mapping

from tunecli.engine.runtime.debug_executor import GraphModuleDebug
from tunecli.engine.runtime.device import Device
from tunecli.engine.runtime.graph_library import GraphLibrary, executor_for
from tunecli.engine.runtime.module import Module


def create(graph_json_str: str, libmod: GraphLibrary | Mapping[str, Module], device: Device | None = None,
           dump_root: str | os.PathLike | None = None) -> GraphModuleDebug:
    """A GraphModuleDebug of ``graph_json_str`` running the kernels of ``libmod`` (as
    ``graph_executor.create``); with ``dump_root``, each ``run`` writes the graph and a Chrome trace
    of the kernel times there."""
    return GraphModuleDebug(executor_for(graph_json_str, libmod, device), graph_json_str, device, dump_root)


__all__ = ["GraphModuleDebug", "create"]
