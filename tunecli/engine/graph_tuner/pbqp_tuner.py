"""``PBQPTuner``: the graph tuner solved by PBQP reductions (TVM's ``PBQPTuner``)."""

from __future__ import annotations

from typing import Unpack

from tunecli.engine.graph_tuner.base_graph_tuner import BaseGraphTuner, SolveOptions
from tunecli.engine.graph_tuner.layout_cost import LayoutCostProblem
from tunecli.engine.graph_tuner.pbqp_solver import solve_pbqp


class PBQPTuner(BaseGraphTuner):
    """PBQP reductions R0/R1/R2 (exact) and the RN heuristic (see ``pbqp_solver``): the choice for
    graphs too branchy for ``DPTuner``."""

    def solve(self, problem: LayoutCostProblem, **kwargs: Unpack[SolveOptions]) -> tuple[int, ...]:
        """PBQP reduction and back-propagation."""
        return solve_pbqp(problem)
