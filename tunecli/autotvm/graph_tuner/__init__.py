"""tunecli.autotvm.graph_tuner: TVM's ``autotvm.graph_tuner`` (re-exports of the engine's)."""

from tunecli.engine.graph_tuner.base_graph_tuner import BaseGraphTuner
from tunecli.engine.graph_tuner.dp_tuner import DPTuner
from tunecli.engine.graph_tuner.pbqp_tuner import PBQPTuner

__all__ = ["BaseGraphTuner", "DPTuner", "PBQPTuner"]
