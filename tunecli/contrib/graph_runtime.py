"""TVM's older name of ``tvm.contrib.graph_executor`` (``from tvm.contrib import graph_runtime``):
the same ``create`` and ``GraphModule``."""

from tunecli.contrib.graph_executor import GraphModule, create

__all__ = ["GraphModule", "create"]
