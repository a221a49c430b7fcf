"""TVM's ``autotvm.graph_tuner.utils.traverse_graph`` module path."""

from tunecli.engine.graph_tuner.node_list import (
    expr2graph,
    get_direct_ancestor,
    get_in_nodes,
    get_out_nodes,
)
from tunecli.engine.graph_tuner.node_list import replace_device_with_tracing as _replace_device_with_tracing

__all__ = ["_replace_device_with_tracing", "expr2graph", "get_direct_ancestor", "get_in_nodes",
           "get_out_nodes"]
