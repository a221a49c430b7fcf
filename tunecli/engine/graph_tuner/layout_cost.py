"""The graph tuner's optimisation problem: one candidate per convolution, smallest total cost.

Variables are the convolutions (``ConvGraph.nodes``, topological order), each with a vector of
candidate costs (the kernel times of its candidate records); an edge between two convolutions
holds a matrix: the layout-transform time for every pair of their candidates (zero where the
layouts agree).  The total of a choice is the sum of the chosen kernel times plus the chosen
entries of every edge matrix.  ``DPTuner`` solves it exactly, ``PBQPTuner`` by PBQP reductions.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from tunecli.errors import TuneError

#: Cost of a layout transform that cannot be done (a channel count the block does not divide):
#: TVM's ``INVALID_LAYOUT_TIME``, finite so sums stay comparable.
INVALID_LAYOUT_TIME = 10e9


@dataclass(frozen=True)
class LayoutCostProblem:
    """Costs of the candidates of each convolution and of the layout transforms between them.

    Attributes
    ----------
    node_costs : tuple of 1-D arrays
        ``node_costs[v][c]``: kernel time of candidate ``c`` of convolution ``v``.
    edge_costs : mapping of (u, v) with u < v to 2-D arrays
        ``edge_costs[u, v][cu, cv]``: transform time between candidates ``cu`` of ``u`` and ``cv``
        of ``v``.
    """

    node_costs: tuple[np.ndarray, ...]
    edge_costs: Mapping[tuple[int, int], np.ndarray]

    @classmethod
    def create(cls, node_costs: Sequence[Sequence[float]],
               edges: Sequence[tuple[int, int, np.ndarray]]) -> LayoutCostProblem:
        """Build a problem; edge matrices between the same two nodes are summed (either
        orientation).

        Parameters
        ----------
        node_costs : sequence of sequences of float
        edges : sequence of (u, v, matrix)
            ``matrix[cu, cv]`` for ``u != v``.

        Returns
        -------
        LayoutCostProblem
        """
        nodes = tuple(np.asarray(c, dtype="float64") for c in node_costs)
        if any(c.ndim != 1 or c.size == 0 for c in nodes):
            raise TuneError("graph tuner: every convolution needs at least one candidate record")
        table: dict[tuple[int, int], np.ndarray] = {}
        for u, v, matrix in edges:
            m = np.asarray(matrix, dtype="float64")
            if u == v:
                raise TuneError(f"graph tuner: an edge from node {u} to itself")
            if u > v:
                u, v, m = v, u, m.T
            if m.shape != (nodes[u].size, nodes[v].size):
                raise TuneError(f"graph tuner: edge ({u}, {v}) has a {m.shape} matrix, the nodes have "
                                f"{nodes[u].size} and {nodes[v].size} candidates")
            table[u, v] = table[u, v] + m if (u, v) in table else m
        return cls(nodes, table)

    @property
    def size(self) -> int:
        """Number of convolutions."""
        return len(self.node_costs)

    def neighbours(self) -> list[set[int]]:
        """Nodes sharing an edge with each node."""
        adj: list[set[int]] = [set() for _ in self.node_costs]
        for u, v in self.edge_costs:
            adj[u].add(v)
            adj[v].add(u)
        return adj

    def total(self, choice: Sequence[int]) -> float:
        """The cost of choosing candidate ``choice[v]`` for every node ``v``."""
        cost = sum(float(c[i]) for c, i in zip(self.node_costs, choice, strict=True))
        return cost + sum(float(m[choice[u], choice[v]]) for (u, v), m in self.edge_costs.items())

    def brute_force(self) -> tuple[int, ...]:
        """The best choice by trying every combination (for checking the solvers on small problems)."""
        ranges = [range(c.size) for c in self.node_costs]
        return min(itertools.product(*ranges), key=self.total)
