"""PBQP reductions over a :class:`LayoutCostProblem` (the solver of TVM's ``PBQPTuner``).

Nodes are removed one at a time, lowest degree first (ties: lowest index):

- R0, degree 0: nothing to fold; the node later takes its cheapest candidate.
- R1, degree 1: the node's best answer to each candidate of its neighbour is added to the
  neighbour's cost vector.
- R2, degree 2: the node's best answer to each pair of candidates of its two neighbours is added
  to the edge between them (created if missing).
- RN, every node has degree > 2: heuristic; the node of highest degree is fixed to the
  candidate with the smallest cost plus its neighbours' best local answers, and its row of each
  edge is added to the neighbour's costs.

Candidates are then chosen in the reverse order of removal.  R0, R1 and R2 are exact, so on
chains, trees and series-parallel graphs (ResNet's residual blocks) PBQP is optimal; RN is not.
"""

from __future__ import annotations

import numpy as np

from tunecli.engine.graph_tuner.layout_cost import LayoutCostProblem


def solve_pbqp(problem: LayoutCostProblem) -> tuple[int, ...]:
    """A candidate per node: optimal unless an RN reduction was needed.

    Parameters
    ----------
    problem : LayoutCostProblem

    Returns
    -------
    tuple of int
    """
    costs = [c.copy() for c in problem.node_costs]
    edges: dict[tuple[int, int], np.ndarray] = {k: m.copy() for k, m in problem.edge_costs.items()}
    adj = problem.neighbours()

    def matrix(u: int, v: int) -> np.ndarray:
        """Edge matrix with rows for ``u``'s candidates."""
        return edges[u, v] if (u, v) in edges else edges[v, u].T

    def add_edge(u: int, v: int, m: np.ndarray) -> None:
        if u > v:
            u, v, m = v, u, m.T
        edges[u, v] = edges[u, v] + m if (u, v) in edges else m
        adj[u].add(v)
        adj[v].add(u)

    def remove(v: int) -> None:
        for w in adj[v]:
            adj[w].discard(v)
            edges.pop((min(v, w), max(v, w)))
        adj[v] = set()

    live = set(range(problem.size))
    stack: list[tuple] = []
    while live:
        v = min(live, key=lambda n: (len(adj[n]), n))
        degree = len(adj[v])
        if degree == 0:
            stack.append(("R0", v, costs[v].copy()))
        elif degree == 1:
            (w,) = adj[v]
            m = matrix(v, w)
            stack.append(("R1", v, costs[v].copy(), [(w, m.copy())]))
            costs[w] = costs[w] + (costs[v][:, None] + m).min(axis=0)
        elif degree == 2:
            w1, w2 = sorted(adj[v])
            m1, m2 = matrix(v, w1), matrix(v, w2)
            stack.append(("R2", v, costs[v].copy(), [(w1, m1.copy()), (w2, m2.copy())]))
            folded = (costs[v][:, None, None] + m1[:, :, None] + m2[:, None, :]).min(axis=0)
            remove(v)
            add_edge(w1, w2, folded)
            live.discard(v)
            continue
        else:
            v = max(live, key=lambda n: (len(adj[n]), -n))
            local = costs[v].copy()
            for w in adj[v]:
                local += (matrix(v, w) + costs[w][None, :]).min(axis=1)
            best = int(local.argmin())
            for w in adj[v]:
                costs[w] = costs[w] + matrix(v, w)[best]
            stack.append(("RN", v, best))
        remove(v)
        live.discard(v)
    choice: dict[int, int] = {}
    for step in reversed(stack):
        kind, v = step[0], step[1]
        if kind == "RN":
            choice[v] = step[2]
            continue
        total = step[2].copy()
        for w, m in step[3] if kind != "R0" else ():
            total += m[:, choice[w]]
        choice[v] = int(total.argmin())
    return tuple(choice[v] for v in range(problem.size))
