"""A task's history in a log: its records, its trials (configs), its best and the trials since it."""

from __future__ import annotations

import math
from typing import Any

from tunecli.engine.log.record import LogRecord
from tunecli.engine.log.task_history import TaskHistory, task_histories, task_history
from tunecli.engine.measure.result import MeasureErrorNo, MeasureInput, MeasureResult
from tunecli.engine.ops import registry  # noqa: F401  (registers the built-in templates)
from tunecli.engine.task.task import create

DENSE = ("dense.x86", (8, 16, 4, "float32"))  # 1024 FLOP
OTHER = ("dense.x86", (16, 16, 8, "float32"))


def record(task: Any, index: int, cost: float, ok: bool = True) -> tuple:
    error = 0 if ok else int(MeasureErrorNo.RUNTIME_DEVICE)
    costs = (cost,) if ok else ("crashed",)
    inp = MeasureInput(task.target, task, task.config_space.get(index))
    return inp, MeasureResult(costs, error, 0.0, 0.0)


def test_trials_count_configs_once_and_the_best_is_the_lowest_valid_cost() -> None:
    a, b = create(*DENSE, "llvm"), create(*OTHER, "llvm")
    records = [record(a, 0, 3e-3), record(b, 0, 1e-9), record(a, 1, 2e-3, ok=False), record(a, 2, 4e-3),
               record(a, 0, 1e-3)]  # config 0 measured again, lower
    history = task_history(a, records)
    assert list(history.records) == [records[0], records[2], records[3], records[4]]
    assert history.trials == 3 and history.configs == {0, 1, 2}
    assert history.best == records[4] and history.best_cost == 1e-3
    assert history.since_best == 2  # configs 1 and 2 came after the first best (config 0)


def test_a_task_without_records_has_an_empty_history() -> None:
    a, b = create(*DENSE, "llvm"), create(*OTHER, "llvm")
    history = task_history(a, [record(b, 0, 1e-3)])
    assert history == TaskHistory() and history.best_cost == math.inf


def test_a_record_faster_than_any_machine_is_a_trial_but_never_the_best() -> None:
    a = create(*DENSE, "llvm")
    fast, normal = record(a, 0, 1e-15), record(a, 1, 1e-3)  # 1024 FLOP in a femtosecond
    logged = [LogRecord(inp, res, "t.log", line) for line, (inp, res) in enumerate([fast, normal], 1)]
    (history,) = task_histories([a], logged)
    assert history.trials == 2 and history.best_cost == 1e-3
    assert history.since_best == 0  # the implausible first record never was a best
