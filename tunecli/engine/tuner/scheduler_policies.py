"""The task scheduler's policies: which task the next round goes to (``tuner.task_scheduler``).

* ``round-robin``: the tasks in turn (passing over a task whose round is in flight);
* ``gradient``: after the Ansor paper's task scheduler (Zheng et al., OSDI 2020, section 6): the
  task with the largest estimated gradient ``-df/dt_i``, ``t_i`` being the rounds given to task
  ``i``.  The estimate combines, with ``alpha`` (0.2), the improvement of ``g_i`` over the last
  ``backward_window`` rounds and a forward guess: the task's own improvement per trial over the
  later half of its trials in this run (:func:`own_gain`), or, if that is better, reaching the
  speed (FLOPS) of the fastest similar task (same template) divided by ``beta`` (2).  Ansor's
  forward guess ``g_i / t_i`` (every task improving in proportion to its latency) is kept only
  for a task without two valid trials in this run: with it a heavy task whose search has
  plateaued kept the rounds its lighter, still improving neighbours needed.
  The estimated change of ``g_i`` goes through the minimum of its operator
  (``alternatives.latency_change``): a slower alternative gains only by the part of its
  estimate that would beat the faster one (one without a valid config is tuned as a task alone).
  Two rules come before the estimate: a task without a valid config is tuned until it has one,
  and a task with fewer trials than ``min_share`` (0.75) of the mean of the tasks still in the
  schedule gets the round (the furthest behind first), so that no task starves; ties go to the
  task with the fewest trials (round-robin while nothing tells the tasks apart).

A policy chooses among the scheduler's ``available()`` tasks: those still in the schedule and
without a round in flight (several tasks' rounds are measured at once on a cluster).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from tunecli.engine.tuner.alternatives import latency_change

if TYPE_CHECKING:
    from tunecli.engine.tuner.task_scheduler import TaskScheduler

#: The latency of a task without a valid config (``task_scheduler.NO_LATENCY``).
NO_LATENCY = 1e10


@dataclass(frozen=True)
class SchedulerPolicy:
    """One registered way to choose the task of the next round (``choose(scheduler) -> task index``)."""

    name: str
    summary: str
    choose: Callable[[TaskScheduler], int]


def _round_robin(scheduler: TaskScheduler) -> int:
    n = len(scheduler.tasks)
    free = set(scheduler.available())
    start = scheduler.last + 1
    return next(i % n for i in range(start, start + n) if i % n in free)


def gradient(scheduler: TaskScheduler, index: int) -> float:
    """The estimated ``df/dt`` of task ``index`` (<= 0; the most negative gains most).

    The estimate (module doc) of how much one more round changes the task's latency, turned into the
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
    g_next = g - own_gain(scheduler, index)
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


def own_gain(scheduler: TaskScheduler, index: int) -> float:
    """The latency the next round of task ``index`` is estimated to take off (>= 0): its trials'
    improvement per trial over the later half of its trials in this run, times the round's trials;
    Ansor's ``g / t`` while that half has no valid start (fewer than two trials in this run, as for
    a task resumed from a log, or no valid config by the half)."""
    t = scheduler.tasks[index]
    n = len(t.curve)
    half = t.curve[n // 2 - 1] if n >= 2 else NO_LATENCY
    if half >= NO_LATENCY:
        return t.latency / max(t.rounds, 1)
    return (half - t.curve[-1]) / (n - n // 2) * scheduler.round_size(index)


def _behind(scheduler: TaskScheduler, alive: list[int]) -> list[int]:
    """The available tasks below the minimum share: fewer trials than ``min_share`` times the mean of
    the tasks still in the schedule."""
    active = [t.trials for t in scheduler.tasks if t.done is None]
    floor = scheduler.min_share * sum(active) / len(active)
    return [i for i in alive if scheduler.tasks[i].trials < floor]


def _gradient(scheduler: TaskScheduler) -> int:
    alive = scheduler.available()
    behind = _behind(scheduler, alive)
    if behind and all(math.isfinite(scheduler.tasks[i].best_cost) for i in alive):
        return min(behind, key=lambda i: scheduler.tasks[i].trials)
    grads = [gradient(scheduler, i) for i in alive]
    best = min(grads)
    tied = [i for i, grad in zip(alive, grads, strict=True) if grad == best]
    fewest = min(scheduler.tasks[i].trials for i in tied)
    return next(i for i in tied if scheduler.tasks[i].trials == fewest)


_POLICIES = (
    SchedulerPolicy("gradient", "the task whose next round is estimated to lower the weighted latency most "
             "(Ansor's gradient scheduler)", _gradient),
    SchedulerPolicy("round-robin", "the tasks in turn", _round_robin),
)

#: Every task scheduler policy by name (the values of a job's ``tuner.task_scheduler``).
SCHEDULER_POLICIES: dict[str, SchedulerPolicy] = {p.name: p for p in _POLICIES}
