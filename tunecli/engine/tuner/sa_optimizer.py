"""Simulated annealing over config indices, maximising a cost model (TVM's SA optimizer).

``parallel_size`` walkers take random-walk steps (``ConfigSpace.random_walk``); a step is
accepted with probability ``exp(min((new - old) / (t + 1e-5), 1))`` while the temperature
falls linearly from ``temp[0]`` to ``temp[1]``.  The best ``num`` unseen points found are kept
in a heap; the search stops after ``n_iter`` steps or ``early_stop`` steps without a change.

A space of at most ``exhaustive_below`` indices is not annealed: every unvisited valid index is
scored (fewer predictions than one annealing, and the true maxima of the model).
"""

from __future__ import annotations

import heapq
import logging
from typing import TYPE_CHECKING

import numpy as np

from tunecli.engine.tuner.model_based_tuner import CostModel, ModelOptimizer

if TYPE_CHECKING:
    from tunecli.engine.task.task import Task

logger = logging.getLogger("autotvm")


class SimulatedAnnealingOptimizer(ModelOptimizer):
    """Find the maxima of a cost model by parallel simulated annealing.

    Parameters
    ----------
    task : Task
    n_iter : int
    temp : float or (float, float)
        Constant temperature, or (start, end) for linear cooling.
    persistent : bool
        Continue from the walkers of the previous call.
    parallel_size : int
        Number of walkers (capped at the space size).
    early_stop : int, optional
    log_interval : int
    rng : numpy.random.Generator, optional
    exhaustive_below : int
        Spaces of at most this many indices are scored whole instead of annealed (0: always anneal).
    """

    def __init__(self, task: Task, n_iter: int = 500, temp: float | tuple[float, float] = (1, 0),
                 persistent: bool = True, parallel_size: int = 128, early_stop: int | None = 50,
                 log_interval: int = 50, rng: np.random.Generator | None = None,
                 exhaustive_below: int = 4096):
        self.task = task
        self.n_iter = n_iter
        self.temp = temp
        self.persistent = persistent
        self.parallel_size = min(parallel_size, len(task.config_space))
        self.early_stop = early_stop or 10**9
        self.log_interval = log_interval
        self.rng = rng if rng is not None else np.random.default_rng()
        self.points: np.ndarray | None = None
        self.exhaustive_below = exhaustive_below

    def find_maximums(self, model: CostModel, num: int, exclusive: set[int]) -> list[int]:
        """Return up to ``num`` unseen indices with the best predicted scores, best first.

        Parameters
        ----------
        model : CostModel
        num : int
        exclusive : set of int
            Indices never returned (already visited).

        Returns
        -------
        list of int
        """
        space = self.task.config_space
        if space.range_length <= self.exhaustive_below:
            return self._score_all(model, num, exclusive)
        if self.persistent and self.points is not None:
            points = self.points
        else:
            points = space.sample_ints(self.parallel_size, rng=self.rng)
        scores = np.asarray(model.predict(points), dtype=np.float64)
        heap = [(float("-inf"), -1 - i) for i in range(num)]
        heapq.heapify(heap)
        in_heap = set(exclusive)
        in_heap.update(x[1] for x in heap)

        def _push(new_scores: np.ndarray, new_points: np.ndarray) -> bool:
            changed = False
            for s, p in zip(new_scores, new_points, strict=True):
                p = int(p)
                if s > heap[0][0] and p not in in_heap:
                    popped = heapq.heapreplace(heap, (float(s), p))
                    in_heap.discard(popped[1])
                    in_heap.add(p)
                    changed = True
            return changed

        _push(scores, points)
        if isinstance(self.temp, (tuple, list, np.ndarray)):
            t = float(self.temp[0])
            cool = (self.temp[0] - self.temp[1]) / (self.n_iter + 1)
        else:
            t, cool = float(self.temp), 0.0
        k = k_last_modify = 0
        can_walk = any(d > 1 for d in space.dims)
        while can_walk and k < self.n_iter and k < k_last_modify + self.early_stop:
            new_points = space.random_walk_many(points, rng=self.rng)
            new_scores = np.asarray(model.predict(new_points), dtype=np.float64)
            ac_prob = np.exp(np.minimum((new_scores - scores) / (t + 1e-5), 1))
            accept = self.rng.random(len(ac_prob)) < ac_prob
            points = points.copy()
            points[accept] = new_points[accept]
            scores[accept] = new_scores[accept]
            if _push(new_scores, new_points):
                k_last_modify = k
            k += 1
            t -= cool
            if self.log_interval and k % self.log_interval == 0:
                logger.debug("SA iter: %d\tlast_update: %d\tmax-0: %.2f\ttemp: %.2f", k, k_last_modify,
                             max(heap)[0], t)
        heap.sort(key=lambda item: -item[0])
        if self.persistent:
            self.points = points
        return [p for s, p in heap if s >= 0]

    def _score_all(self, model: CostModel, num: int, exclusive: set[int]) -> list[int]:
        """The ``num`` unvisited valid indices of best score, best first (ties: lower index)."""
        space = self.task.config_space
        points = np.array([i for i in range(space.range_length)
                           if i not in exclusive and space.is_index_valid(i)], dtype=np.int64)
        if not len(points):
            return []
        scores = np.asarray(model.predict(points), dtype=np.float64)
        order = np.argsort(-scores, kind="stable")[:num]
        return [int(p) for p in points[order]]
