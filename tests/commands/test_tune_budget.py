"""``tunecli tune`` of a job with ``tuner.budget``: the tasks share the budget, measured for real."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from tunecli.commands.tune import _ProgressView
from tunecli.engine.actions.tune import TuneEvent
from tunecli.engine.log.record import load_from_file

from .conftest import FakeTerminal, Invoke, progress_table_text

BUDGET_JOB = """\
name: budgeted
target: llvm
log: {log}
tasks:
  - template: dense.x86
    args: [8, 16, 4]
  - template: dense.x86
    args: [16, 16, 8]
    weight: 4
  - template: dense.x86
    args: [16, 8, 8]
    weight: 2
tuner: {{kind: xgb, budget: {budget}, seed: 0, plan_size: 4}}
measure:
  builder: {{timeout: 20, n_parallel: 2}}
  runner: {{number: 1, repeat: 1, timeout: 20, check_correctness: true}}
"""


def trials_per_task(log: Path) -> Counter:
    return Counter(tuple(inp.task.args[:3]) for inp, _ in load_from_file(log))


def test_a_budget_is_shared_by_the_tasks_and_resumed_per_task(invoke: Invoke, tmp_path: Path) -> None:
    log = tmp_path / "budgeted.log"
    job = tmp_path / "budgeted.yaml"
    job.write_text(BUDGET_JOB.format(log=log, budget=24))
    first = invoke("tune", str(job), "--json")
    assert first.exit_code == 0, first.output
    summary = json.loads(first.stdout)
    assert (summary["budget"], summary["task_scheduler"], summary["ok"]) == (24, "gradient", True)
    tasks = summary["tasks"]
    assert [t["weight"] for t in tasks] == [1.0, 4.0, 2.0]
    measured = [t["measured"] for t in tasks]
    assert sum(measured) == 24 and min(measured) >= 4  # the warm-up round: plan_size trials each
    assert trials_per_task(log) == dict(zip([(8, 16, 4), (16, 16, 8), (16, 8, 8)], measured, strict=True))
    assert summary["weighted_latency"] == sum(t["weight"] * t["best_cost"] for t in tasks)
    assert all(len(line) <= 80 for line in first.stderr.splitlines())
    for line, t in zip(first.stderr.replace(":\n  ", ": ").splitlines(), tasks, strict=False):
        assert line.startswith(f"task {t['index'] + 1}/3 dense.x86(") and f"{t['measured']}/24 trials" in line

    job.write_text(BUDGET_JOB.format(log=log, budget=30))
    again = invoke("tune", str(job), "--json")
    assert again.exit_code == 0, again.output
    resumed = json.loads(again.stdout)["tasks"]
    assert [t["previous"] for t in resumed] == measured  # the log's records count for their task
    assert sum(t["measured"] for t in resumed) == 6
    counts = trials_per_task(log)
    assert sum(counts.values()) == 30
    for t in resumed:
        assert counts[tuple(t["args"][:3])] == t["previous"] + t["measured"]
    indices = [(tuple(inp.task.args), inp.config.index) for inp, _ in load_from_file(log)]
    assert len(indices) == len(set(indices))  # nothing measured twice
    assert "resuming, " in again.stderr

    done = invoke("tune", str(job))  # the budget is spent: nothing more to measure
    assert done.exit_code == 0, done.output
    assert "budget 30 trials, gradient task scheduler; weighted latency " in " ".join(done.stdout.split())
    assert trials_per_task(log) == counts


def test_a_budgeted_run_shows_a_total_line_beside_the_task_lines() -> None:
    view = _ProgressView(FakeTerminal())
    view(TuneEvent("start", 0, 2, "dense.x86(8, 16, 4, float32)", 24, 0, budget=24, spent=0))
    view(TuneEvent("start", 1, 2, "dense.x86(16, 16, 8, float32)", 24, 0, budget=24, spent=0))
    view(TuneEvent("batch", 1, 2, "dense.x86(16, 16, 8, float32)", 24, 5, 1e9, 2e9, budget=24, spent=5))
    lines = progress_table_text(view).splitlines()
    assert len(lines) == 3
    assert "task total" in lines[0] and "all tasks (budget)" in lines[0] and "5/24" in lines[0]
    assert "task 2/2" in lines[2] and "5/24" in lines[2] and "1.0/2.0 GFLOPS" in lines[2]


def test_tasks_with_n_trial_show_a_total_line_too() -> None:
    view = _ProgressView(FakeTerminal())
    view(TuneEvent("start", 0, 2, "dense.x86(8, 16, 4, float32)", 8, 0, spent=0, all_trials=16))
    view(TuneEvent("batch", 0, 2, "dense.x86(8, 16, 4, float32)", 8, 3, 1e9, 2e9, spent=3, all_trials=16))
    lines = progress_table_text(view).splitlines()
    assert len(lines) == 2
    assert "task total" in lines[0] and "all tasks " in lines[0] and "3/16" in lines[0]


def test_a_task_left_without_a_trial_by_a_spent_budget_says_so(invoke: Invoke, tmp_path: Path) -> None:
    log = tmp_path / "budgeted.log"
    job = tmp_path / "budgeted.yaml"
    two_tasks = BUDGET_JOB.split("  - template: dense.x86\n    args: [16, 8, 8]\n    weight: 2\n")
    job.write_text("".join(two_tasks).format(log=log, budget=8))
    assert invoke("tune", str(job)).exit_code == 0
    job.write_text(BUDGET_JOB.format(log=log, budget=8))  # a third task, the budget already spent
    done = invoke("tune", str(job))
    assert done.exit_code == 1
    text = " ".join(done.stderr.split())
    assert "task 2 (dense.x86): no trial: the budget of 8 trials was spent (8 in the log)" in text
    assert "raise tuner.budget or give --n-trial" in text
