"""What a tuning log already holds for one task: the record a resumed tuning starts from.

``task_histories(tasks, logged)`` reads a log's records once and gives each task its
``TaskHistory``: its records (``task_records.belongs_to``: same workload, target and config), its
trials (distinct configs: a config measured again, ``tuner.remeasure``, counts once), its best
record and the trials since the best was found.  A record faster than any machine
(``log.plausibility``) still marks its config as measured but is nobody's best.  The tune
action's progress, the task scheduler and the tuners (``Tuner.resume``) start from this one
record instead of each deriving it from the log again.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from tunecli.engine.log.plausibility import judged
from tunecli.engine.log.record import LogRecord, Record
from tunecli.engine.log.task_records import belongs_to
from tunecli.engine.task.task import Task


@dataclass(frozen=True)
class TaskHistory:
    """One task's records in a log, and what they say.

    Attributes
    ----------
    records : tuple of (MeasureInput, MeasureResult)
        The task's records, in log order.
    trials : int
        Distinct configs among them.
    best : (MeasureInput, MeasureResult) or None
        The valid, plausible record of lowest cost (the first of equal ones).
    since_best : int
        Trials (first records of configs) after the one that set the best, as a per-task early
        stopping counts them; all trials while there is no best.
    """

    records: tuple[Record, ...] = ()
    trials: int = 0
    best: Record | None = None
    since_best: int = 0

    @property
    def best_cost(self) -> float:
        """Mean seconds of the best record (``inf`` without one)."""
        return self.best[1].mean_cost if self.best is not None else math.inf

    @property
    def configs(self) -> frozenset[int]:
        """The config indices measured."""
        return frozenset(int(inp.config.index) for inp, _ in self.records)


def task_history(task: Task, records: Iterable[Record], trusted: Sequence[bool] | None = None) -> TaskHistory:
    """The history of ``task`` in ``records``.

    Parameters
    ----------
    task : Task
    records : iterable of (MeasureInput, MeasureResult)
        Any records (those of other tasks are left out).
    trusted : sequence of bool, optional
        Per record of ``records``, in order: whether it may be a best (default: every one;
        ``task_histories`` passes whether each is plausible).

    Returns
    -------
    TaskHistory
    """
    pairs = list(records)
    flags = list(trusted) if trusted is not None else [True] * len(pairs)
    own = [(pair, ok) for pair, ok in zip(pairs, flags, strict=True) if belongs_to(pair[0], task)]
    seen: set[int] = set()
    best: Record | None = None
    since_best = 0
    for (inp, res), may_be_best in own:
        better = may_be_best and res.ok and (best is None or res.mean_cost < best[1].mean_cost)
        if int(inp.config.index) not in seen:
            seen.add(int(inp.config.index))
            since_best = 0 if better else since_best + 1
        if better:
            best = (inp, res)
    return TaskHistory(tuple(pair for pair, _ in own), len(seen), best, since_best)


def task_histories(tasks: Sequence[Task], logged: Sequence[LogRecord]) -> list[TaskHistory]:
    """Each task's history in a log's records, the implausible ones never a best (warned once).

    Parameters
    ----------
    tasks : sequence of Task
    logged : sequence of LogRecord
        As ``record.read_log`` yields them.

    Returns
    -------
    list of TaskHistory
        One per task, in order.
    """
    verdicts = list(judged(logged))
    pairs = [(record.inp, record.result) for record, _ in verdicts]
    trusted = [ok for _, ok in verdicts]
    return [task_history(task, pairs, trusted) for task in tasks]
