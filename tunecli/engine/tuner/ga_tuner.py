"""Genetic-algorithm tuner (TVM's ``GATuner``).

Genes are knob-position vectors (``point2knob``).  Each generation of ``pop_size`` genes is
measured; the first is drawn when the tuner is made (TVM's ``genes`` and ``visited`` right after
``__init__``), the next one keeps ``elite_num`` elites as parents, picks parent pairs with
probability proportional to their score, crosses them over at one point and mutates each knob
with ``mutation_prob``.  Unlike TVM, a child that was already visited is discarded (and the
generation topped up with random unvisited configs), so no config is measured twice; a gene of
the current generation that an earlier run measured (``mark_visited``, ``load_history``) is
replaced by an unvisited one.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

import numpy as np

from tunecli.engine.tuner.tuner import Tuner
from tunecli.errors import TuneError

if TYPE_CHECKING:
    from tunecli.engine.measure.result import MeasureInput, MeasureResult
    from tunecli.engine.task.space import ConfigEntity
    from tunecli.engine.task.task import Task

_ATTEMPTS_PER_CHILD = 20
#: TVM's defaults of ``pop_size`` and ``elite_num``.
POP_SIZE, ELITE_NUM = 100, 3


def elite_num_problem(pop_size: int, elite_num: int) -> str | None:
    """What is wrong with this ``pop_size``/``elite_num`` pair, or None."""
    if elite_num > pop_size:
        return f"elite_num ({elite_num}) must not exceed pop_size ({pop_size})"
    return None


class GATuner(Tuner):
    """Tuner with a genetic algorithm.

    Parameters
    ----------
    task : Task
    pop_size : int
        Genes per generation.
    elite_num : int
        Best genes kept as parents for the next generation.
    mutation_prob : float
        Probability that a knob of a child is set to a random value.
    seed : int, optional
    """

    def __init__(self, task: Task, pop_size: int = POP_SIZE, elite_num: int = ELITE_NUM,
                 mutation_prob: float = 0.1, seed: int | None = None):
        super().__init__(task, seed=seed)
        problem = elite_num_problem(pop_size, elite_num)
        if problem:
            raise TuneError(f"GATuner: {problem}")
        self.pop_size = min(pop_size, len(self.space))
        self.elite_num = min(self.pop_size, elite_num)
        self.mutation_prob = mutation_prob
        self.genes: list[list[int]] = []
        self.scores: list[float] = []
        self.elites: list[list[int]] = []
        self.elite_scores: list[float] = []
        self.trial_pt = 0
        self.genes = self._random_genes(self.pop_size)

    def _unvisited_count(self) -> int:
        return len(self.space) - len(self.visited)

    def _remaining(self) -> list[int]:
        return [i for i in range(self.space.range_length)
                if i not in self.visited and self.space.is_index_valid(i)]

    def _take(self, indices: list[int]) -> list[list[int]]:
        self.visited.update(indices)
        return [self.space.point2knob(i) for i in indices]

    def _random_genes(self, n: int) -> list[list[int]]:
        if self._unvisited_count() <= n:
            return self._take(self._remaining())
        picked = []
        for _ in range(n):
            index = self.space.get_rand_index(to_exclude=self.visited, rng=self.rng)
            self.visited.add(index)
            picked.append(index)
        return [self.space.point2knob(i) for i in picked]

    def mark_visited(self, indices: Iterable[int]) -> None:
        """Never propose these indices; unmeasured genes among them are replaced by unvisited ones."""
        measured = {int(i) for i in indices}
        super().mark_visited(measured)
        pending = self.genes[self.trial_pt:]
        kept = [g for g in pending if self.space.knob2point(g) not in measured]
        if len(kept) == len(pending):
            return
        self.genes = self.genes[: self.trial_pt] + kept + self._random_genes(len(pending) - len(kept))

    def has_next(self) -> bool:
        """Return True while a gene of this generation is unmeasured or the space is not exhausted."""
        return self.trial_pt < len(self.genes) or self._unvisited_count() > 0

    def next_batch(self, batch_size: int) -> list[ConfigEntity]:
        """Return the next unmeasured genes of the current generation."""
        ret = []
        while len(ret) < batch_size and self.trial_pt < len(self.genes):
            ret.append(self.space.get(self.space.knob2point(self.genes[self.trial_pt])))
            self.trial_pt += 1
        return ret

    def update(self, inputs: list[MeasureInput], results: list[MeasureResult]) -> None:
        """Score the measured genes; breed the next generation once all are measured."""
        for _inp, res in zip(inputs, results, strict=True):
            self.scores.append(res.flops(self.task.flop))
        if len(self.scores) < len(self.genes) or self._unvisited_count() == 0:
            return
        if self._unvisited_count() <= self.pop_size:
            next_genes = self._take(self._remaining())
        else:
            next_genes = self._breed()
        self.genes = next_genes
        self.trial_pt = 0
        self.scores = []

    def _breed(self) -> list[list[int]]:
        genes = self.genes + self.elites
        scores = np.array(self.scores[: len(self.genes)] + self.elite_scores, dtype=np.float64)
        elite_idx = np.argpartition(scores, -self.elite_num)[-self.elite_num:]
        self.elites = [genes[i] for i in elite_idx]
        self.elite_scores = [float(scores[i]) for i in elite_idx]
        probs = scores + 1e-8
        probs /= np.max(probs)
        probs /= np.sum(probs)
        dims = self.space.dims
        children: list[list[int]] = []
        chosen: set[int] = set()
        for _ in range(self.pop_size * _ATTEMPTS_PER_CHILD):
            if len(children) >= self.pop_size:
                break
            if len(genes) >= 2:
                i1, i2 = self.rng.choice(len(genes), size=2, replace=False, p=probs)
                point = int(self.rng.integers(len(dims)))
                child = genes[i1][:point] + genes[i2][point:]
            else:
                child = list(genes[0])
            for j, dim in enumerate(dims):
                if self.rng.random() < self.mutation_prob:
                    child[j] = int(self.rng.integers(dim))
            index = self.space.knob2point(child)
            if index not in self.visited and index not in chosen and self.space.is_index_valid(index):
                chosen.add(index)
                children.append(child)
        self.visited.update(chosen)
        return children + self._random_genes(self.pop_size - len(children))
