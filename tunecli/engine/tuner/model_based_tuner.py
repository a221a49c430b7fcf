"""Model-based tuning: a cost model ranks configs, an optimizer searches the model's maxima.

The cost model is first fitted after ``first_fit`` measurements, then each time the data has
doubled, until fits are ``plan_size`` measurements apart (``first_fit=plan_size``: TVM's
schedule, a fit every ``plan_size``); each fit plans the next ``plan_size`` trials, and the last
5 % of a plan (and everything before the first plan) are random unvisited configs
(epsilon-greedy exploration).

With a *search model* (a cheap model fitted on the same data, e.g. knob features while the
cost model uses loop-nest features that cost a lowering per config), the optimizer explores
the search model and the cost model only re-ranks the ``rerank_factor * plan_size`` best
candidates found: the plan is still chosen by the cost model, but the optimizer's tens of
thousands of predictions stay cheap.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

import numpy as np

from tunecli.engine.log.task_history import TaskHistory, task_history
from tunecli.engine.task.scope import GLOBAL_SCOPE
from tunecli.engine.tuner.tuner import Tuner
from tunecli.errors import TuneError

if TYPE_CHECKING:
    from tunecli.engine.log.record import Record
    from tunecli.engine.measure.result import MeasureInput, MeasureResult
    from tunecli.engine.task.space import ConfigEntity
    from tunecli.engine.task.task import Task

#: Records of a template before a tuner starts from a transfer-learned model (TVM's default is
#: 500: about three other tasks tuned 200 trials each; 150 records of a network's other
#: layers already cut the trials to the goal 1.9-3.5x in ``benchmarks/bench_transfer.py``).
MIN_SEED_RECORDS = 100


class CostModel:
    """Predicts a score (higher is better) for config indices of one task."""

    def fit(self, xs: Sequence[int], ys: Sequence[float], plan_size: int) -> None:
        """Fit on config indices ``xs`` with FLOPS ``ys`` (0 for failures).

        Parameters
        ----------
        xs : sequence of int
        ys : sequence of float
        plan_size : int
        """
        raise NotImplementedError

    def fit_log(self, records: Iterable[tuple], plan_size: int, min_seed_records: int = 500) -> bool:
        """Fit on records of earlier runs; return False when there are too few.

        Parameters
        ----------
        records : iterable of (MeasureInput, MeasureResult)
        plan_size : int
        min_seed_records : int

        Returns
        -------
        bool
        """
        raise NotImplementedError

    def predict(self, xs: Sequence[int], output_margin: bool = False) -> np.ndarray:
        """Return the predicted score of every index in ``xs``.

        Parameters
        ----------
        xs : sequence of int
        output_margin : bool

        Returns
        -------
        numpy.ndarray
        """
        raise NotImplementedError

    def load_basemodel(self, base_model: CostModel) -> None:
        """Use ``base_model`` (trained on history) as a prior.

        Parameters
        ----------
        base_model : CostModel
        """
        raise NotImplementedError

    def spawn_base_model(self) -> CostModel:
        """Return a fresh model of the same kind, to be trained as a base model.

        Returns
        -------
        CostModel
        """
        raise NotImplementedError


class ModelOptimizer:
    """Searches the config space for the indices a cost model scores highest."""

    def find_maximums(self, model: CostModel, num: int, exclusive: set[int]) -> list[int]:
        """Return up to ``num`` indices not in ``exclusive``, best first.

        Parameters
        ----------
        model : CostModel
        num : int
        exclusive : set of int

        Returns
        -------
        list of int
        """
        raise NotImplementedError


def submodular_pick(scores: np.ndarray, knobs: list[list[int]], n_pick: int,
                    knob_weight: float = 1.0) -> list[int]:
    """Greedily pick ``n_pick`` items maximising score plus the number of distinct knob values.

    Parameters
    ----------
    scores : numpy.ndarray
    knobs : list of list of int
        Knob positions of every item.
    n_pick : int
    knob_weight : float

    Returns
    -------
    list of int
        Positions of the picked items.
    """
    n = len(scores)
    remain = list(range(n))
    seen: list[set[int]] = [set() for _ in range(len(knobs[0]) if knobs else 0)]
    picked: list[int] = []
    for _ in range(min(n_pick, n)):
        best, best_score = -1, -1e9
        for i in remain:
            gain = scores[i] + knob_weight * sum(knobs[i][j] not in seen[j] for j in range(len(seen)))
            if gain > best_score:
                best, best_score = i, gain
        picked.append(best)
        remain.remove(best)
        for j, value in enumerate(knobs[best]):
            seen[j].add(value)
    return picked


class ModelBasedTuner(Tuner):
    """A tuner driven by a cost model and a model optimizer.

    Parameters
    ----------
    task : Task
    cost_model : CostModel
    model_optimizer : ModelOptimizer
    plan_size : int
        Trials per plan; the model is refitted after each ``plan_size`` measurements.
    diversity_filter_ratio : int or float, optional
        When given (>= 1), plan from ``plan_size * ratio`` candidates the most diverse ``plan_size``.
    seed : int, optional
    search_model : CostModel, optional
        A cheap model the optimizer explores instead of ``cost_model`` (see the module doc).
    rerank_factor : int
        With a search model: candidates per planned trial that ``cost_model`` re-ranks.
    first_fit : int, optional
        Measurements before the first fit (default ``plan_size``; see the module doc).
    min_seed_records : int
        Records of the task's template (other shapes' included) that :meth:`resume` needs to train
        a transfer-learning base model (:data:`MIN_SEED_RECORDS`; TVM's is 500).
    """

    def __init__(self, task: Task, cost_model: CostModel, model_optimizer: ModelOptimizer, plan_size: int,
                 diversity_filter_ratio: float | None = None, seed: int | None = None,
                 search_model: CostModel | None = None, rerank_factor: int = 4, first_fit: int | None = None,
                 min_seed_records: int = MIN_SEED_RECORDS):
        super().__init__(task, seed=seed)
        if int(min_seed_records) < 1:
            raise TuneError(f"{type(self).__name__}: min_seed_records must be >= 1, got {min_seed_records}")
        self.min_seed_records = int(min_seed_records)
        if diversity_filter_ratio is not None and diversity_filter_ratio < 1:
            raise TuneError(f"{type(self).__name__}: diversity_filter_ratio must be >= 1, "
                            f"got {diversity_filter_ratio}")
        if first_fit is not None and not 1 <= int(first_fit) <= plan_size:
            raise TuneError(f"{type(self).__name__}: first_fit must be in [1, plan_size={plan_size}], "
                            f"got {first_fit}")
        if int(rerank_factor) < 1:
            raise TuneError(f"{type(self).__name__}: rerank_factor must be >= 1, got {rerank_factor}")
        self.search_model = search_model
        self.rerank_factor = int(rerank_factor)
        self.target = task.target
        self.plan_size = plan_size
        self.cost_model = cost_model
        self.model_optimizer = model_optimizer
        self.diversity_filter_ratio = diversity_filter_ratio
        self.dims = self.space.dims
        self.trials: list[int] = []
        self.trial_pt = 0
        self.xs: list[int] = []
        self.ys: list[float] = []
        self.flops_max = 0.0
        self.train_ct = 0
        self.next_fit = int(first_fit or plan_size)  # measurements at which the model is refitted
        self._late_records = 0  # other tasks' records at the last ``transfer_late`` that tried

    def has_next(self) -> bool:
        """Return True while an unvisited valid config is left."""
        return len(self.visited) < len(self.space)

    def next_batch(self, batch_size: int) -> list[ConfigEntity]:
        """Return the next planned configs (random ones outside a plan or in its last 5 %)."""
        ret = []
        while len(ret) < batch_size and self.has_next():
            while self.trial_pt < len(self.trials):
                index = self.trials[self.trial_pt]
                if index not in self.visited and self.space.is_index_valid(index):
                    break
                self.trial_pt += 1
            if self.trial_pt >= len(self.trials) - int(0.05 * self.plan_size):
                index = self.space.get_rand_index(to_exclude=self.visited, rng=self.rng)
            ret.append(self.space.get(index))
            self.visited.add(int(index))
        return ret

    def update(self, inputs: list[MeasureInput], results: list[MeasureResult]) -> None:
        """Record (index, flops) pairs; refit and replan once a plan's worth of new data is in."""
        for inp, res in zip(inputs, results, strict=True):
            index = int(inp.config.index)
            # this task's FLOPs: records replayed from a log carry a task without a FLOP count
            flops = res.flops(self.task.flop)
            self.flops_max = max(self.flops_max, flops)
            self.xs.append(index)
            self.ys.append(flops)
            if self.space.is_index_valid(index):
                self.visited.add(index)
        if len(self.xs) >= self.next_fit and self.flops_max > 1e-6:
            self.next_fit = len(self.xs) + min(len(self.xs), self.plan_size)
            self._refit()

    def _refit(self) -> None:
        """Fit the models on the measurements so far and plan the next trials with them."""
        self.cost_model.fit(self.xs, self.ys, self.plan_size)
        if self.search_model is not None:
            self.search_model.fit(self.xs, self.ys, self.plan_size)
        self.trials = self._plan(self.cost_model, self.search_model)
        self.trial_pt = 0
        self.train_ct += 1

    @property
    def transferred(self) -> bool:
        """Whether the cost model learns from earlier records of the template (a transfer-learning
        base model, :meth:`resume`)."""
        return getattr(self.cost_model, "base_model", None) is not None

    def _candidates(self, model: CostModel, search_model: CostModel | None, num: int) -> list[int]:
        """The ``num`` unvisited indices ``model`` scores best (searched through ``search_model``)."""
        if search_model is None:
            return [int(x) for x in self.model_optimizer.find_maximums(model, num, self.visited)]
        pool = [int(x) for x in self.model_optimizer.find_maximums(search_model, num * self.rerank_factor,
                                                                   self.visited)]
        if not pool:
            return []
        scores = np.asarray(model.predict(pool), dtype=np.float64)
        order = np.argsort(-scores, kind="stable")[:num]
        return [pool[i] for i in order]

    def _plan(self, model: CostModel, search_model: CostModel | None = None) -> list[int]:
        if not self.diversity_filter_ratio:
            return self._candidates(model, search_model, self.plan_size)
        n_candidates = int(self.plan_size * self.diversity_filter_ratio)
        candidate = self._candidates(model, search_model, n_candidates)
        if not candidate:
            return []
        knobs = [self.space.point2knob(x) for x in candidate]
        pick = submodular_pick(np.zeros(len(candidate)), knobs, self.plan_size, knob_weight=1)
        return [int(candidate[i]) for i in pick]

    def transfer_late(self, records: Sequence[Record]) -> None:
        """Start transfer learning from the records of the template's other tasks in ``records``
        (those known now, e.g. measured since this tuner started), unless the model already learns
        from other tasks' records or they are still fewer than ``min_seed_records``.  It retries
        only when there are more than at its last try.

        Parameters
        ----------
        records : sequence of (MeasureInput, MeasureResult)
        """
        if self.transferred:
            return
        others = [(inp, res) for inp, res in records
                  if inp.task.name == self.task.name and inp.task.workload != self.task.workload]
        if len(others) < self.min_seed_records or len(others) <= self._late_records:
            return
        self._late_records = len(others)
        self.resume(task_history(self.task, ()), others)

    def resume(self, history: TaskHistory, data_set: Sequence[Record] = (),
               min_seed_records: int | None = None) -> None:
        """Replay this task's records (marked visited, used as training data) and, with at least
        ``min_seed_records`` records of the same template in ``data_set``, train a transfer-learning
        base model: it plans the first trials, or, when the tuner has already fitted its model on
        its own measurements (a resumed log, or a task scheduler's later round), the model is
        fitted again with it and plans the next trials.

        Parameters
        ----------
        history : TaskHistory
        data_set : sequence of (MeasureInput, MeasureResult)
        min_seed_records : int, optional
            Default: the tuner's ``min_seed_records``.
        """
        if min_seed_records is None:
            min_seed_records = self.min_seed_records
        records = list(data_set)
        same = list(history.records)
        if same:
            self.update([inp for inp, _ in same], [res for _, res in same])
        old = GLOBAL_SCOPE.in_tuning
        GLOBAL_SCOPE.in_tuning = True
        try:
            base_model = self.cost_model.spawn_base_model()
            if not base_model.fit_log(records, self.plan_size, min_seed_records):
                return
            search_base = None
            if self.search_model is not None:
                search_base = self.search_model.spawn_base_model()
                if not search_base.fit_log(records, self.plan_size, min_seed_records):
                    search_base = None
            if not self.trials:
                self.trials = self._candidates(base_model, search_base, self.plan_size)
                self.trial_pt = 0
            self.cost_model.load_basemodel(base_model)
            if self.search_model is not None and search_base is not None:
                self.search_model.load_basemodel(search_base)
            if self.train_ct and self.flops_max > 1e-6:
                self._refit()
        finally:
            GLOBAL_SCOPE.in_tuning = old
