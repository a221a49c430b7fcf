"""Exact dynamic programming over a :class:`LayoutCostProblem` (the solver of TVM's ``DPTuner``).

Convolutions are visited in topological order.  The state is a table over the candidates of the
*frontier*: the visited convolutions that still share an edge with an unvisited one (TVM's
dependencies: a convolution whose output feeds several later nodes, such as a residual
block's input).  Visiting a node adds its axis with its kernel costs and the transform costs
of its edges to the frontier; a frontier node with no unvisited neighbour left is minimised
away, keeping the argmin for the backward pass.  The result is optimal on any graph; the
table grows with the product of the frontier's candidate counts (``max_num_states`` bounds it).
"""

from __future__ import annotations

import numpy as np

from tunecli.engine.graph_tuner.layout_cost import LayoutCostProblem
from tunecli.errors import TuneError


def solve_dp(problem: LayoutCostProblem, max_num_states: int | None = None) -> tuple[int, ...]:
    """The candidate of each node minimising ``problem.total``.

    Parameters
    ----------
    problem : LayoutCostProblem
    max_num_states : int, optional
        Most states (table entries, summed over the forward pass) allowed, as TVM's ``run``.

    Returns
    -------
    tuple of int
        One candidate index per node.
    """
    last_use = list(range(problem.size))
    for u, v in problem.edge_costs:
        last_use[u] = max(last_use[u], v)
    frontier: list[int] = []
    table = np.zeros(())
    steps: list[tuple[int, list[int], np.ndarray]] = []
    num_states = 0
    for v, costs in enumerate(problem.node_costs):
        table = table[..., None] + costs
        frontier.append(v)
        for pos_u, u in enumerate(frontier[:-1]):
            matrix = problem.edge_costs.get((u, v))
            if matrix is not None:
                shape = [1] * len(frontier)
                shape[pos_u], shape[-1] = matrix.shape
                table = table + matrix.reshape(shape)
        num_states += table.size
        if max_num_states is not None and num_states > max_num_states:
            raise TuneError(f"Too many states detected while running dynamic programming: got "
                            f"{num_states} states but upper limit is {max_num_states}.")
        for u in [u for u in frontier if last_use[u] <= v]:
            pos = frontier.index(u)
            frontier.pop(pos)
            steps.append((u, list(frontier), table.argmin(axis=pos)))
            table = table.min(axis=pos)
    choice: dict[int, int] = {}
    for u, rest, argmin in reversed(steps):
        choice[u] = int(argmin[tuple(choice[r] for r in rest)])
    return tuple(choice[v] for v in range(problem.size))
