"""TVM's ``autotvm.graph_tuner.utils.utils`` module path."""

from tunecli.engine.graph_tuner.node_list import bind_inputs, has_multiple_inputs, is_boundary_node

__all__ = ["bind_inputs", "has_multiple_inputs", "is_boundary_node"]
