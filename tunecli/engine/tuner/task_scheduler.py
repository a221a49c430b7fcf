"""Tuning many tasks with one trial budget: a task scheduler spends it round by round.

The objective is the end-to-end latency estimate ``f = sum(w_i * g_i)``: ``w_i`` is the weight
of task ``i`` (how often it occurs in the network) and ``g_i`` its best measured latency.  Tasks
that are alternative implementations of one operator (``alternatives``: a convolution's direct
and Winograd tasks) count once, at the latency of the faster: ``f`` sums, per operator, its
calls times the minimum of its tasks' latencies (``tuner.alternatives``).  Each
round measures one batch of at most ``round_trials`` configs of one task, proposed by that
task's own tuner, which persists across rounds.  Which task a round goes to is the scheduler's
*policy* (:data:`SCHEDULER_POLICIES`, the job's ``tuner.task_scheduler``):

* ``round-robin``: the tasks in turn;
* ``gradient``: the Ansor paper's task scheduler (Zheng et al., OSDI 2020, section 6): the task
  with the largest estimated gradient ``-df/dt_i``, ``t_i`` being the rounds given to task ``i``.
  The estimate combines, with ``alpha`` (0.2), the improvement of ``g_i`` over the last
  ``backward_window`` rounds and an optimistic forward guess: either ``g_i`` keeps improving at
  its average rate so far (``g_i - g_i / t_i``) or the task reaches the speed (FLOPS) of the
  fastest similar task (same template) divided by ``beta`` (2).  Ties are broken at random.
  The estimated change of ``g_i`` goes through the minimum of its operator
  (``alternatives.latency_change``): a slower alternative gains only by the part of its
  estimate that would beat the faster one (one without a valid config is tuned as a task alone).

Both policies first give every task one round (warm-up), so every task has a latency.
A task leaves the schedule when its space is exhausted, or (per-task early stopping) when
``early_stopping`` of its trials in a row brought no better config.  Tuning ends when the budget
is spent or no task is left.

A task's tuner is made when the task gets its first round and starts from its history
(``log.task_history``) and every record known at that moment (``Tuner.resume``): those of the
earlier log and those measured in this run for other tasks, which is TVM's transfer learning
between the tasks of a network.  Records of a task already in the log count toward the budget,
its trials and its best, as its ``TaskHistory`` says.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from tunecli.engine.log.task_history import TaskHistory, task_history
from tunecli.engine.measure.result import MeasureInput, MeasureResult
from tunecli.engine.task.task import Task
from tunecli.engine.tuner.alternatives import latency_change, operator_groups, weighted_latency
from tunecli.engine.tuner.tuner import Tuner
from tunecli.errors import TuneError

#: Trials per round when the tuner has no ``plan_size`` (TVM's ``num_measures_per_round``).
DEFAULT_ROUND_TRIALS = 64
#: The latency of a task without a valid config (TVM's sentinel): such a task is tuned first.
NO_LATENCY = 1e10

#: ``cb(scheduler, index, inputs, results)``: called after every round (one measured batch).
RoundCallback = Callable[["TaskScheduler", int, list, list], None]


@dataclass
class ScheduledTask:
    """The scheduler's view of one task.

    Attributes
    ----------
    task : Task
    weight : float
        How often the task occurs (its latency counts ``weight`` times in the objective).
    tuner : Tuner or None
        Made when the task gets its first round.
    previous : int
        Configs of the task already in the log when tuning started.
    trials : int
        Configs measured for the task, ``previous`` included.
    rounds : int
        Rounds given to the task (those of earlier runs estimated from ``previous``).
    best_cost : float
        Best mean latency in seconds (``inf`` while no valid config is known).
    since_best : int
        Trials since the best config was found (all trials while there is none).
    history : list of float
        ``latency`` after each round (preceded by the latency the log gave, if it had records).
    done : str or None
        Why the task left the schedule (``"space exhausted"``, ``"early stopped"``), or None.
    group : str or None
        Its similarity group (the template name): the gradient's forward estimate compares it with
        the fastest task of the group.  None once it left the group.
    """

    task: Task
    weight: float = 1.0
    tuner: Tuner | None = None
    previous: int = 0
    trials: int = 0
    rounds: int = 0
    best_cost: float = math.inf
    since_best: int = 0
    history: list[float] = field(default_factory=list)
    done: str | None = None
    group: str | None = None

    @property
    def latency(self) -> float:
        """``best_cost``, or :data:`NO_LATENCY` while there is no valid config."""
        return self.best_cost if math.isfinite(self.best_cost) else NO_LATENCY

    @property
    def flops(self) -> float:
        """FLOPS of the best config (0 when unknown)."""
        flop = float(getattr(self.task, "flop", 0) or 0)
        return flop / self.best_cost if math.isfinite(self.best_cost) and self.best_cost > 0 else 0.0

    def record(self, res: MeasureResult) -> None:
        """Count one measurement of this task."""
        self.trials += 1
        if res.ok and res.mean_cost < self.best_cost:
            self.best_cost = res.mean_cost
            self.since_best = 0
        else:
            self.since_best += 1


@dataclass(frozen=True)
class SchedulerPolicy:
    """One registered way to choose the task of the next round (``choose(scheduler) -> task index``)."""

    name: str
    summary: str
    choose: Callable[[TaskScheduler], int]


def _round_robin(scheduler: TaskScheduler) -> int:
    n = len(scheduler.tasks)
    start = scheduler.last + 1
    return next(i % n for i in range(start, start + n) if scheduler.tasks[i % n].done is None)


def gradient(scheduler: TaskScheduler, index: int) -> float:
    """The estimated ``df/dt`` of task ``index`` (<= 0; the most negative gains most).

    Ansor's estimate of how much one more round changes the task's latency, turned into the
    change of ``f`` by ``alternatives.latency_change`` (its weight times that estimate, for a task
    without alternatives).  A task without a valid config gets its weight times the estimate
    whether it has alternatives or not: its latency is unknown, not known to be slower, and it
    is tuned until it has one, as a task alone is.

    Parameters
    ----------
    scheduler : TaskScheduler
    index : int

    Returns
    -------
    float
    """
    t = scheduler.tasks[index]
    g = t.latency
    window = scheduler.backward_window
    backward = (t.history[-1] - t.history[-1 - window]) / window if len(t.history) > window else 0.0
    g_next = g - g / max(t.rounds, 1)
    similar = scheduler.similar(index)
    flop = float(getattr(t.task, "flop", 0) or 0)
    if len(similar) > 1 and flop > 0:
        best_flops = max(scheduler.tasks[j].flops for j in similar)
        if best_flops > 0:
            g_next = min(g_next, scheduler.beta * flop / best_flops)
    forward = g_next - g
    delta = scheduler.alpha * backward + (1 - scheduler.alpha) * forward
    if not math.isfinite(t.best_cost):
        return t.weight * delta
    return latency_change([u.latency for u in scheduler.tasks], [u.weight for u in scheduler.tasks],
                          scheduler.operators, index, delta)


def _gradient(scheduler: TaskScheduler) -> int:
    alive = [i for i, t in enumerate(scheduler.tasks) if t.done is None]
    grads = [gradient(scheduler, i) for i in alive]
    if max(grads) == min(grads):
        return int(alive[scheduler.rng.integers(len(alive))])
    return alive[int(np.argmin(grads))]


_POLICIES = (
    SchedulerPolicy("gradient", "the task whose next round is estimated to lower the weighted latency most "
             "(Ansor's gradient scheduler)", _gradient),
    SchedulerPolicy("round-robin", "the tasks in turn", _round_robin),
)

#: Every task scheduler policy by name (the values of a job's ``tuner.task_scheduler``).
SCHEDULER_POLICIES: dict[str, SchedulerPolicy] = {p.name: p for p in _POLICIES}


def budget_problem(budget: int | None, n_tasks: int) -> str | None:
    """Why ``budget`` cannot be spent over ``n_tasks`` tasks (less than one trial each), or None.

    The one rule of the scheduler, the job schema (the listed tasks) and ``tune`` (every task, a
    network's included).

    Parameters
    ----------
    budget : int or None
    n_tasks : int

    Returns
    -------
    str or None
    """
    if budget is not None and n_tasks and budget < n_tasks:
        return f"a budget of {budget} trials is less than one trial per task ({n_tasks} tasks)"
    return None


class TaskScheduler:
    """Spend ``budget`` trials over ``tasks``, one round of one task at a time.

    Parameters
    ----------
    tasks : sequence of Task
    make_tuner : callable
        ``make_tuner(task) -> Tuner``; called when the task gets its first round.
    budget : int
        Trials for all tasks together, those already in ``history`` included.
    weights : sequence of float, optional
        Occurrences of each task (default 1 each).
    policy : str
        A name in :data:`SCHEDULER_POLICIES`.
    round_trials : int, optional
        Most trials per round (default: the tuner's ``plan_size``, else 64); never more than
        ``budget // len(tasks)``, so that the warm-up reaches every task.
    early_stopping : int, optional
        A task leaves the schedule after this many of its trials without a better config.
    history : sequence of (MeasureInput, MeasureResult)
        Records of earlier runs (the log being resumed).
    task_histories : sequence of TaskHistory, optional
        Each task's history in ``history`` (``log.task_history.task_histories``, which leaves
        records faster than any machine out of the bests); default: built from ``history``.
    seed : int, optional
        Seed of the random tie-break.
    alternatives : sequence of sequence of int
        Disjoint groups of indices of tasks that implement one operator (only the fastest runs);
        see ``tuner.alternatives``.
    alpha, beta : float
        Weight of the backward estimate; speed ratio to the best similar task that is assumed
        reachable (Ansor's 0.2 and 2).
    backward_window : int
        Rounds over which the backward improvement rate is measured.
    """

    def __init__(self, tasks: Sequence[Task], make_tuner: Callable[[Task], Tuner], budget: int,
                 weights: Sequence[float] | None = None, policy: str = "gradient",
                 round_trials: int | None = None, early_stopping: int | None = None,
                 history: Sequence[tuple] = (), task_histories: Sequence[TaskHistory] | None = None,
                 seed: int | None = None, alpha: float = 0.2,
                 beta: float = 2.0, backward_window: int = 3, alternatives: Sequence[Sequence[int]] = ()):
        if not tasks:
            raise TuneError("task scheduler: no tasks")
        if policy not in SCHEDULER_POLICIES:
            raise TuneError(f"unknown task scheduler {policy!r} "
                            f"(registered: {', '.join(SCHEDULER_POLICIES)})")
        weights = [1.0] * len(tasks) if weights is None else [float(w) for w in weights]
        if len(weights) != len(tasks) or any(not (w > 0 and math.isfinite(w)) for w in weights):
            raise TuneError(f"task scheduler: expected one positive weight per task, got {weights}")
        problem = budget_problem(budget, len(tasks))
        if problem:
            raise TuneError(f"task scheduler: {problem}")
        if round_trials is not None and round_trials < 1:
            raise TuneError(f"task scheduler: round_trials must be >= 1, got {round_trials}")
        self.policy = SCHEDULER_POLICIES[policy]
        #: Every operator as the indices of its tasks: a group of alternatives, or one task alone.
        self.operators = operator_groups(len(tasks), alternatives)
        self.make_tuner = make_tuner
        self.budget = int(budget)
        self.round_trials = round_trials
        self.max_round = max(1, self.budget // len(tasks))
        self.early_stopping = early_stopping
        self.alpha, self.beta, self.backward_window = alpha, beta, backward_window
        self.rng = np.random.default_rng(seed)
        self.history: list[tuple] = list(history)
        if task_histories is None:
            task_histories = [task_history(task, self.history) for task in tasks]
        if len(task_histories) != len(tasks):
            raise TuneError(f"task scheduler: {len(task_histories)} task histories for {len(tasks)} tasks")
        self.task_histories = tuple(task_histories)
        self.last = -1
        self.tasks = [ScheduledTask(task, weight, group=task.name) for task, weight in zip(tasks, weights,
                                                                                              strict=True)]
        for t, known in zip(self.tasks, self.task_histories, strict=True):
            self._restore(t, known)

    # --------------------------------------------------------------- state
    def _restore(self, t: ScheduledTask, known: TaskHistory) -> None:
        """Start the task from its history (its trials, best, estimated rounds)."""
        t.trials = t.previous = known.trials
        t.best_cost, t.since_best = known.best_cost, known.since_best
        if t.previous:  # under half a round (the untuned config tune measures first): still cold
            t.rounds = round(t.previous / self._round_size(t))
            t.history.append(t.latency)
        if t.previous >= len(t.task.config_space):
            t.done = "space exhausted"
        elif self.early_stopping and t.previous and t.since_best >= self.early_stopping:
            t.done = "early stopped"

    def _round_size(self, t: ScheduledTask) -> int:
        size = self.round_trials or getattr(t.tuner, "plan_size", None) or DEFAULT_ROUND_TRIALS
        return max(1, min(int(size), self.max_round))

    @property
    def spent(self) -> int:
        """Trials of all tasks, those already in the log included."""
        return sum(t.trials for t in self.tasks)

    @property
    def objective(self) -> float:
        """The weighted latency in seconds: ``sum(w_i * g_i)``, alternatives at the fastest's
        (``alternatives.weighted_latency``); inf while an operator has no valid config."""
        tasks = self.tasks
        return weighted_latency([t.best_cost for t in tasks], [t.weight for t in tasks], self.operators)

    def similar(self, index: int) -> list[int]:
        """Indices of the tasks in the similarity group of task ``index`` (itself included)."""
        group = self.tasks[index].group
        if group is None:
            return [index]
        return [i for i, t in enumerate(self.tasks) if t.group == group]

    def _leave_group(self, index: int) -> None:
        """Ansor's rule: a task tuned many rounds more than the rest of its group, still more than
        ``beta`` times slower than its best, is not like them; it leaves the group."""
        group = [j for j in self.similar(index) if j != index]
        if not group:
            return
        t = self.tasks[index]
        best = max(self.tasks[j].flops for j in [index, *group])
        if t.flops < best / self.beta and t.rounds > 5 + max(self.tasks[j].rounds for j in group):
            t.group = None

    # --------------------------------------------------------------- the loop
    def next_task(self) -> int | None:
        """The index of the task the next round goes to (None when tuning is over)."""
        if self.spent >= self.budget:
            return None
        alive = [i for i, t in enumerate(self.tasks) if t.done is None]
        if not alive:
            return None
        cold = [i for i in alive if self.tasks[i].rounds == 0]
        return cold[0] if cold else self.policy.choose(self)

    def tune(self, measure_option: Any, callbacks: Sequence[Callable[..., None]] = (),
             round_callbacks: Sequence[RoundCallback] = ()) -> None:
        """Run rounds until the budget is spent or every task is done.

        Parameters
        ----------
        measure_option : dict or callable
            From ``measure_option(builder, runner)`` (one for all tasks), or a ``measure_batch``.
        callbacks : sequence of callable
            Tuner callbacks (``Tuner.tune``'s), given every round; ``tuner.task`` tells the task.
        round_callbacks : sequence of callable
            Each called as ``cb(scheduler, index, inputs, results)`` after every round.
        """
        while (index := self.next_task()) is not None:
            inputs, results = self.tune_round(index, measure_option, callbacks)
            for callback in round_callbacks:
                callback(self, index, inputs, results)

    def tune_round(self, index: int, measure_option: Any,
                   callbacks: Sequence[Callable[..., None]] = ()) -> tuple[list, list]:
        """Measure one round of task ``index``; return its inputs and results.

        Parameters
        ----------
        index : int
        measure_option : dict or callable
        callbacks : sequence of callable
            Tuner callbacks.

        Returns
        -------
        (list of MeasureInput, list of MeasureResult)
        """
        t = self.tasks[index]
        if t.tuner is None:
            t.tuner = self.make_tuner(t.task)
            if self.history:  # its own records are still those of its history: this is its first round
                t.tuner.resume(self.task_histories[index], self.history)
        inputs: list[MeasureInput] = []
        results: list[MeasureResult] = []

        def collect(_tuner: Any, ins: list, res: list) -> None:
            inputs.extend(ins)
            results.extend(res)

        n = min(self._round_size(t), self.budget - self.spent)
        if t.tuner.has_next():
            t.tuner.tune(n_trial=n, measure_option=measure_option, callbacks=[*callbacks, collect])
        for res in results:
            t.record(res)
        self.history.extend(zip(inputs, results, strict=True))
        t.rounds += 1
        t.history.append(t.latency)
        self.last = index
        if not results or not t.tuner.has_next():
            t.done = "space exhausted"
        elif self.early_stopping and t.since_best >= self.early_stopping:
            t.done = "early stopped"
        self._leave_group(index)
        return inputs, results
