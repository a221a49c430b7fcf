"""Tuning many tasks with one trial budget: a task scheduler spends it round by round.

The objective is the end-to-end latency estimate ``f = sum(w_i * g_i)``: ``w_i`` is the weight
of task ``i`` (how often it occurs in the network) and ``g_i`` its best measured latency.  Tasks
that are alternative implementations of one operator (``alternatives``: a convolution's direct
and Winograd tasks) count once, at the latency of the faster: ``f`` sums, per operator, its
calls times the minimum of its tasks' latencies (``tuner.alternatives``).  Each
round measures one batch of at most ``round_trials`` configs of one task, proposed by that
task's own tuner, which persists across rounds.  Which task a round goes to is the scheduler's
*policy* (:data:`SCHEDULER_POLICIES`, the job's ``tuner.task_scheduler``, in
``tuner.scheduler_policies``): ``round-robin``, or ``gradient`` (Ansor's, the task whose next
round is estimated to lower ``f`` most).

Both policies first give every task one round (warm-up), so every task has a latency.
A task leaves the schedule when its space is exhausted, or (per-task early stopping) when
``early_stopping`` of its trials in a row brought no better config.  Tuning ends when the budget
is spent or no task is left.

A task's tuner is made when the task gets its first round and starts from its history
(``log.task_history``) and every record known at that moment (``Tuner.resume``): those of the
earlier log and those measured in this run for other tasks, which is TVM's transfer learning
between the tasks of a network.  A model-based tuner that had too few records of its template
then (the first tasks of a template to get a round) is given them at a later round, once the
other tasks of the template have measured its ``min_seed_records``.  Records of a task already
in the log count toward the budget, its trials and its best, as its ``TaskHistory`` says.

When the measure backend can take several rounds at once (a runner with ``concurrent_lanes``:
a Ray cluster, one lane per node), rounds of different tasks are measured at the same time
(``tuner.concurrent_rounds``): the policy chooses each among the tasks without a round in flight,
and the trials of rounds in flight are reserved from the budget, so that the totals are exact.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from tunecli.engine.log.task_history import TaskHistory, task_history
from tunecli.engine.measure.result import MeasureInput, MeasureResult
from tunecli.engine.task.task import Task
from tunecli.engine.tuner.alternatives import operator_groups, weighted_latency
from tunecli.engine.tuner.concurrent_rounds import concurrent_lanes, tune_concurrently
from tunecli.engine.tuner.model_based_tuner import ModelBasedTuner
from tunecli.engine.tuner.scheduler_policies import NO_LATENCY, SCHEDULER_POLICIES, SchedulerPolicy, gradient
from tunecli.engine.tuner.tuner import MeasureSetting, Tuner
from tunecli.errors import TuneError

#: Trials per round when the tuner has no ``plan_size`` (TVM's ``num_measures_per_round``).
DEFAULT_ROUND_TRIALS = 64

__all__ = ["DEFAULT_ROUND_TRIALS", "NO_LATENCY", "SCHEDULER_POLICIES", "RoundCallback", "ScheduledTask",
           "SchedulerPolicy", "TaskScheduler", "budget_problem", "gradient"]

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
    running : int
        Trials of its round in flight (0 when none is).
    curve : list of float
        ``latency`` after each trial measured in this run (the gradient's forward estimate).
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
    running: int = 0
    curve: list[float] = field(default_factory=list)

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
        self.curve.append(self.latency)


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
    """Spend ``budget`` trials over ``tasks``, round by round (see the module doc).

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
        Accepted for the callers' sake: the policies are deterministic (ties go to the task with the
        fewest trials).
    alternatives : sequence of sequence of int
        Disjoint groups of indices of tasks that implement one operator (only the fastest runs);
        see ``tuner.alternatives``.
    alpha, beta : float
        Weight of the backward estimate; speed ratio to the best similar task that is assumed
        reachable (Ansor's 0.2 and 2).
    backward_window : int
        Rounds over which the backward improvement rate is measured.
    min_share : float
        The gradient policy gives the round to a task with fewer trials than this fraction of the
        mean of the tasks still in the schedule (0: no minimum share).
    """

    def __init__(self, tasks: Sequence[Task], make_tuner: Callable[[Task], Tuner], budget: int,
                 weights: Sequence[float] | None = None, policy: str = "gradient",
                 round_trials: int | None = None, early_stopping: int | None = None,
                 history: Sequence[tuple] = (), task_histories: Sequence[TaskHistory] | None = None,
                 seed: int | None = None, alpha: float = 0.2,
                 beta: float = 2.0, backward_window: int = 3, alternatives: Sequence[Sequence[int]] = (),
                 min_share: float = 0.75):
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
        if not 0 <= min_share <= 1:
            raise TuneError(f"task scheduler: min_share must be between 0 and 1, got {min_share}")
        self.policy = SCHEDULER_POLICIES[policy]
        #: Every operator as the indices of its tasks: a group of alternatives, or one task alone.
        self.operators = operator_groups(len(tasks), alternatives)
        self.make_tuner = make_tuner
        self.budget = int(budget)
        self.round_trials = round_trials
        self.max_round = max(1, self.budget // len(tasks))
        self.early_stopping = early_stopping
        self.alpha, self.beta, self.backward_window = alpha, beta, backward_window
        self.min_share = float(min_share)
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

    def round_size(self, index: int) -> int:
        """Trials of the next round of task ``index``."""
        return self._round_size(self.tasks[index])

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
    def available(self) -> list[int]:
        """Indices of the tasks a round can go to: still in the schedule, no round in flight."""
        return [i for i, t in enumerate(self.tasks) if t.done is None and not t.running]

    def next_task(self) -> int | None:
        """The index of the task the next round goes to (None when no round can start now: the
        budget is spent or reserved by rounds in flight, or no task is available)."""
        if self.spent + sum(t.running for t in self.tasks) >= self.budget:
            return None
        alive = self.available()
        if not alive:
            return None
        cold = [i for i in alive if self.tasks[i].rounds == 0]
        return cold[0] if cold else self.policy.choose(self)

    def tune(self, measure_option: MeasureSetting, callbacks: Sequence[Callable[..., None]] = (),
             round_callbacks: Sequence[RoundCallback] = ()) -> None:
        """Run rounds until the budget is spent or every task is done.

        Parameters
        ----------
        measure_option : dict or callable
            From ``measure_option(builder, runner)`` (one for all tasks), or a ``measure_batch``.
            When its runner has ``concurrent_lanes``, rounds of several tasks run at once.
        callbacks : sequence of callable
            Tuner callbacks (``Tuner.tune``'s), given every round; ``tuner.task`` tells the task.
            With concurrent rounds they are called one at a time, from the rounds' threads.
        round_callbacks : sequence of callable
            Each called as ``cb(scheduler, index, inputs, results)`` after every round.
        """
        lanes = concurrent_lanes(measure_option) if len(self.tasks) > 1 else None
        if lanes is not None:
            tune_concurrently(self, lanes, measure_option, callbacks, round_callbacks)
            return
        while (index := self.next_task()) is not None:
            inputs, results = self.tune_round(index, measure_option, callbacks)
            for callback in round_callbacks:
                callback(self, index, inputs, results)

    def tune_round(self, index: int, measure_option: MeasureSetting,
                   callbacks: Sequence[Callable[..., None]] = ()
                   ) -> tuple[list[MeasureInput], list[MeasureResult]]:
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
        self.begin_round(index)
        inputs, results = self.measure_round(index, measure_option, callbacks)
        self.end_round(index, inputs, results)
        return inputs, results

    def begin_round(self, index: int) -> int:
        """Start a round of task ``index`` (its tuner made on its first); reserve and return its trials."""
        t = self.tasks[index]
        if t.tuner is None:
            t.tuner = self.make_tuner(t.task)
            if self.history:  # its own records are still those of its history: this is its first round
                t.tuner.resume(self.task_histories[index], self.history)
        elif isinstance(t.tuner, ModelBasedTuner):  # too few records of its template at its first round?
            t.tuner.transfer_late(self.history)
        reserved = sum(u.running for u in self.tasks)
        t.running = max(1, min(self._round_size(t), self.budget - self.spent - reserved))
        self.last = index
        return t.running

    def measure_round(self, index: int, measure_option: MeasureSetting,
                      callbacks: Sequence[Callable[..., None]] = ()
                      ) -> tuple[list[MeasureInput], list[MeasureResult]]:
        """Measure the round :meth:`begin_round` started (only the task's own tuner is touched, so
        rounds of different tasks may run in different threads)."""
        t = self.tasks[index]
        inputs: list[MeasureInput] = []
        results: list[MeasureResult] = []

        def collect(_tuner: Tuner, ins: list[MeasureInput], res: list[MeasureResult]) -> None:
            inputs.extend(ins)
            results.extend(res)

        if t.tuner is not None and t.tuner.has_next():
            t.tuner.tune(n_trial=t.running, measure_option=measure_option, callbacks=[*callbacks, collect])
        return inputs, results

    def end_round(self, index: int, inputs: list[MeasureInput], results: list[MeasureResult]) -> None:
        """Count the measured round of task ``index``: its trials, best, history; whether it is done."""
        t = self.tasks[index]
        t.running = 0
        for res in results:
            t.record(res)
        self.history.extend(zip(inputs, results, strict=True))
        t.rounds += 1
        t.history.append(t.latency)
        if not results or t.tuner is None or not t.tuner.has_next():
            t.done = "space exhausted"
        elif self.early_stopping and t.since_best >= self.early_stopping:
            t.done = "early stopped"
        self._leave_group(index)
