"""The graph tuners by name (``graph_tuner:`` of a model job, its validation, docs and tests)."""

from __future__ import annotations

from tunecli.engine.graph_tuner.base_graph_tuner import BaseGraphTuner
from tunecli.engine.graph_tuner.dp_tuner import DPTuner
from tunecli.engine.graph_tuner.pbqp_tuner import PBQPTuner

#: Name -> graph tuner class: ``dp`` is exact on ResNet-style graphs, ``pbqp`` handles the rest.
GRAPH_TUNERS: dict[str, type[BaseGraphTuner]] = {"dp": DPTuner, "pbqp": PBQPTuner}
