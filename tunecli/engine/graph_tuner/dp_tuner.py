"""``DPTuner``: the graph tuner solved exactly by dynamic programming (TVM's ``DPTuner``)."""

from __future__ import annotations

from typing import Unpack

from tunecli.engine.graph_tuner.base_graph_tuner import BaseGraphTuner, SolveOptions
from tunecli.engine.graph_tuner.dp_solver import solve_dp
from tunecli.engine.graph_tuner.layout_cost import LayoutCostProblem


class DPTuner(BaseGraphTuner):
    """Dynamic programming over the convolutions in graph order (see ``dp_solver``); optimal.

    ``run(max_num_states=None)`` stops with a TuneError when the DP tables would hold more states
    (a graph with many long-lived branches), where ``PBQPTuner`` is the alternative.
    """

    def solve(self, problem: LayoutCostProblem, **kwargs: Unpack[SolveOptions]) -> tuple[int, ...]:
        """Exact DP; ``max_num_states`` bounds the tables (TVM's keyword of ``run``)."""
        return solve_dp(problem, kwargs.get("max_num_states"))
