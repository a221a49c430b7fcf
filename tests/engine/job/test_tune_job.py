"""Resuming a tune from its log: only the records of each task (workload, target, config) count."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

from tunecli.engine.job.tune_job import tune_job
from tunecli.engine.log.record import encode, load_from_file
from tunecli.engine.measure.result import MeasureInput, MeasureResult
from tunecli.engine.ops import registry  # noqa: F401  (registers the built-in templates)
from tunecli.engine.target import Target
from tunecli.engine.task.task import create

MATMUL = ("tutorial/matmul", (16, 16, 16, "float32"))
DENSE = ("dense.x86", (8, 16, 4, "float32"))


def record(workload: tuple, target: str, index: int, *, stale: bool = False) -> str:
    task = create(*workload, target)
    text = encode(MeasureInput(Target(target), task, task.config_space.get(index)),
                  MeasureResult((1e-3,), 0, 1e-3, 0.0))
    if not stale:
        return text
    row = json.loads(text)  # config `index` logged under the next index: not that config any more
    row["config"]["index"] = index + 1
    return json.dumps(row)


def test_resume_counts_only_the_records_of_the_task(tmp_path: Path) -> None:
    log = tmp_path / "mixed.log"
    earlier = [
        record(MATMUL, "llvm", 1),
        record(MATMUL, "llvm", 2),
        record(MATMUL, "llvm -mcpu=x86-64", 3),  # same workload, another target
        record(MATMUL, "llvm -mcpu=x86-64", 4),
        record(DENSE, "llvm", 5),  # another workload
        record(MATMUL, "llvm", 6, stale=True),
    ]
    log.write_text("\n".join(earlier) + "\n")
    job = tmp_path / "job.yaml"
    job.write_text(textwrap.dedent(f"""\
        name: resume
        target: llvm
        log: {log}
        tasks:
          - template: tutorial/matmul
            args: [16, 16, 16]
        tuner: {{kind: random, n_trial: 5, seed: 0}}
        measure:
          builder: {{n_parallel: 1}}
          runner: {{number: 1, repeat: 1}}
        """))
    (outcome,) = tune_job(str(job)).tasks
    assert outcome.previous == 2 and outcome.measured == 3
    ours = [inp.config.index for inp, _ in load_from_file(log)
            if inp.task.workload == create(*MATMUL, "llvm").workload and inp.target == Target("llvm")]
    assert ours[:3] == [1, 2, 7] and len(ours) == 6
    assert len(set(ours[3:]) | {1, 2}) == 5  # nothing measured twice


def test_a_round_robin_budget_gives_the_tasks_rounds_in_turn(tmp_path: Path) -> None:
    log = tmp_path / "robin.log"
    job = tmp_path / "robin.yaml"
    job.write_text(textwrap.dedent(f"""\
        name: robin
        log: {log}
        tasks:
          - template: tutorial/matmul
            args: [16, 16, 16]
          - template: dense.x86
            args: [8, 16, 4]
            weight: 3
        tuner: {{kind: xgb, budget: 10, task_scheduler: round-robin, seed: 0, plan_size: 2}}
        measure:
          builder: {{n_parallel: 1}}
          runner: {{number: 1, repeat: 1}}
        """))
    summary = tune_job(str(job))
    assert (summary.budget, summary.task_scheduler) == (10, "round-robin")
    assert [(t.measured, t.weight) for t in summary.tasks] == [(6, 1.0), (4, 3.0)]  # rounds of 2: a b a b a
    assert summary.weighted_latency == summary.tasks[0].best_cost + 3 * summary.tasks[1].best_cost
    order = [inp.task.name for inp, _ in load_from_file(log)]
    assert order == ["tutorial/matmul"] * 2 + ["dense.x86"] * 2 + ["tutorial/matmul"] * 2 + \
        ["dense.x86"] * 2 + ["tutorial/matmul"] * 2
