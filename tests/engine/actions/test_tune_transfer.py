"""Tuning a job task by task: a task's tuner starts from the records of the tasks tuned before it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.engine.actions.test_tune import write_job
from tunecli.engine.actions.job_file import tune_job
from tunecli.engine.tuner.model_based_tuner import ModelBasedTuner

TASKS = "[{template: tutorial/matmul, args: [16, 16, 16]}, {template: tutorial/matmul, args: [16, 32, 16]}]"


def test_a_later_task_resumes_from_the_records_of_the_earlier_ones(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[tuple[tuple, list[tuple]]] = []
    resume = ModelBasedTuner.resume

    def watched(self: ModelBasedTuner, history: Any, data_set: Any = (), min_seed_records: int = 500) -> None:
        seen.append((self.task.args, [tuple(inp.task.args) for inp, _ in data_set]))
        resume(self, history, data_set, min_seed_records)

    monkeypatch.setattr(ModelBasedTuner, "resume", watched)
    log = tmp_path / "two.log"
    summary = tune_job(write_job(tmp_path, log, "{kind: xgb, n_trial: 3, seed: 0, plan_size: 2}", TASKS))
    assert [t.measured for t in summary.tasks] == [3, 3]
    second = next(records for args, records in seen if args[1] == 32)
    assert second.count((16, 16, 16, "float32")) == 3  # every record of the first task
    assert second.count((16, 32, 16, "float32")) <= 1  # its own untuned config at most
