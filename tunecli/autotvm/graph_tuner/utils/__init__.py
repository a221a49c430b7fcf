"""TVM's ``autotvm.graph_tuner.utils``: the node-list view of a graph (``engine.graph_tuner.node_list``)."""

from tunecli.engine.graph_tuner.node_list import (
    bind_inputs,
    expr2graph,
    get_direct_ancestor,
    get_in_nodes,
    get_out_nodes,
    has_multiple_inputs,
    is_boundary_node,
)

__all__ = ["bind_inputs", "expr2graph", "get_direct_ancestor", "get_in_nodes", "get_out_nodes",
           "has_multiple_inputs", "is_boundary_node"]
