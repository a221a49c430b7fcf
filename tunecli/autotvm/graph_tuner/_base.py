"""TVM's ``autotvm.graph_tuner._base``: constants of the graph tuner."""

from tunecli.engine.graph_tuner.layout_cost import INVALID_LAYOUT_TIME
from tunecli.engine.graph_tuner.node_list import OPT_OUT_OP

__all__ = ["INVALID_LAYOUT_TIME", "OPT_OUT_OP"]
