"""The tuner and measure sections of a job: their defaults, budgets, and each mistake named."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.engine.job.job_files import GOOD, assert_reported, mistakes, write
from tunecli.engine.job.spec import load_job
from tunecli.engine.job.tuning_spec import DEFAULT_N_TRIAL, BuilderSpec, RunnerSpec, TunerSpec
from tunecli.engine.target import Target
from tunecli.errors import JobError

BAD = [
    # (replace this in GOOD, with this, expected message after "<path>:"; "\n" between several problems)
    ("  n_trial: 20", "  n_trial: many", "10: tuner.n_trial: expected an integer, got 'many'"),
    ("  n_trial: 20", "  n_trial: 0", "10: tuner.n_trial: expected an integer >= 1, got 0"),
    ("  n_trial: 20", "  n_trial: true", "10: tuner.n_trial: expected an integer, got 'true'"),
    ("  n_trial: 20", "  n_trial: ~", "10: tuner.n_trial: expected an integer, got nothing"),
    ("  kind: ga", "  kind: annealing",
     "9: tuner.kind: expected one of random, gridsearch, ga, xgb, got 'annealing'"),
    ("  pop_size: 8", "  plan_size: 8",
     "13: tuner.plan_size: unknown field (expected one of: kind, n_trial, early_stopping, seed, budget, "
     "task_scheduler, remeasure, rematch, pop_size, elite_num, mutation_prob)"),
    ("  seed: 3", "  seed: -1", "12: tuner.seed: expected an integer >= 0, got -1"),
    ("  seed: 3", "  remeasure: -1", "12: tuner.remeasure: expected an integer >= 0, got -1"),
    ("  seed: 3", "  remeasure: 2.5", "12: tuner.remeasure: expected an integer, got '2.5'"),
    ("  seed: 3", "  rematch: 2", "12: tuner.rematch: expected true or false, got '2'"),
    ("  seed: 3", "  remeasure: all", "12: tuner.remeasure: expected an integer, got 'all'"),
    ("  pop_size: 8", "  pop_size: 8\n  elite_num: 9",
     "14: tuner.elite_num: elite_num (9) must not exceed pop_size (8)"),
    ("  pop_size: 8", "  pop_size: 2", "13: tuner.pop_size: elite_num (3) must not exceed pop_size (2)"),
    ("  builder: {timeout: 5, n_parallel: 2}", "  builder: {timeout: 0, n_parallel: 2}",
     "15: measure.builder.timeout: expected a number > 0, got 0"),
    ("  builder: {timeout: 5, n_parallel: 2}", "  builder: {timeout: 5, n_parallel: 2.5}",
     "15: measure.builder.n_parallel: expected an integer, got '2.5'"),
    ("check_correctness: true", "check_correctness: yes please",
     "16: measure.runner.check_correctness: expected true or false, got 'yes please'"),
    ("check_correctness: true}", "enable_cpu_cache_flush: true, kind: rpc}",
     "16: measure.runner: missing required field 'key' (runner kind rpc)\n"
     "16: measure.runner: missing required field 'tracker' (runner kind rpc)"),
    ("{number: 2,", "{key: abc, number: 2,",
     "16: measure.runner.key: unknown field (expected one of: kind, number, repeat, min_repeat_ms, timeout, "
     "enable_cpu_cache_flush, warmup_ms, cooldown_interval, check_correctness)"),
    ("{number: 2,", "{kind: rpc, key: k, tracker: 'h:1', n_parallel: 2, number: 2,",
     "16: measure.runner.n_parallel: unknown field (expected one of: kind, number, repeat, min_repeat_ms, "
     "timeout, enable_cpu_cache_flush, warmup_ms, cooldown_interval, check_correctness, key, tracker, "
     "priority)"),
    ("check_correctness: true}", "kind: rpc, key: k, tracker: nowhere}",
     "16: measure.runner.tracker: expected HOST:PORT (e.g. 127.0.0.1:9190), got 'nowhere'"),
    ("check_correctness: true}", "check_correctness: true, warmup_ms: -1}",
     "16: measure.runner.warmup_ms: expected a number >= 0, got -1"),
    ("{number: 2,", "{number: 0,", "16: measure.runner.number: expected an integer >= 1, got 0"),
    ("{number: 2,", "{kind: ssh, number: 2,",
     "16: measure.runner.kind: expected one of local, rpc, got 'ssh'"),
    ("  pop_size: 8", "  mutation_prob: 2",
     "13: tuner.mutation_prob: expected a number between 0 and 1, got 2"),
    ("  seed: 3", "  seed: 3\n  seed: 4", "13: tuner.seed: duplicate field"),
    ("  n_trial: 20", "  n_trial: 20\n  budget: 40",
     "10: tuner.n_trial: give either n_trial (trials per task) or budget (trials for all tasks)"),
    ("  n_trial: 20", "  budget: 0", "10: tuner.budget: expected an integer >= 1, got 0"),
    ("  n_trial: 20", "  budget: 1",
     "8: tuner: a budget of 1 trials is less than one trial per task (2 tasks)"),
    ("  n_trial: 20", "  budget: 40\n  task_scheduler: greedy",
     "11: tuner.task_scheduler: expected one of gradient, round-robin, got 'greedy'"),
    ("  n_trial: 20", "  task_scheduler: round-robin",
     "10: tuner.task_scheduler: a task scheduler spends a budget: give tuner.budget too"),
]


@pytest.mark.parametrize(("old", "new", "message"), mistakes(BAD))
def test_bad_section_names_file_line_and_field(tmp_path: Path, old: str, new: str, message: str) -> None:
    assert_reported(tmp_path, old, new, message)


def test_a_budget_is_spent_by_the_gradient_scheduler_unless_the_job_names_another(tmp_path: Path) -> None:
    text = GOOD.replace("  n_trial: 20", "  budget: 60").replace(
        "    args: {N: 16, K: 32, M: 16}", "    args: {N: 16, K: 32, M: 16}\n    weight: 2.5")
    job = load_job(write(tmp_path, text))
    assert (job.tuner.budget, job.tuner.task_scheduler) == (60, "gradient")
    assert [t.weight for t in job.tasks] == [1.0, 2.5]
    robin_text = text.replace("  budget: 60", "  budget: 60\n  task_scheduler: round-robin")
    robin = load_job(write(tmp_path, robin_text))
    assert robin.tuner.task_scheduler == "round-robin"
    per_task = job.with_overrides(n_trial=5).tuner  # --n-trial: trials per task again
    assert (per_task.n_trial, per_task.budget, per_task.task_scheduler) == (5, None, None)
    assert load_job(write(tmp_path, GOOD)).tuner.budget is None


def test_remeasure_is_off_unless_given(tmp_path: Path) -> None:
    assert load_job(write(tmp_path, GOOD)).tuner.remeasure == 0
    job = load_job(write(tmp_path, GOOD.replace("  seed: 3", "  seed: 3\n  remeasure: 8")))
    assert (job.tuner.remeasure, job.tuner.seed) == (8, 3)
    assert job.with_overrides(n_trial=5, tuner="random").tuner.remeasure == 8
    assert job.with_overrides(remeasure=0).tuner.remeasure == 0  # --remeasure 0 turns it off
    assert load_job(write(tmp_path, GOOD)).with_overrides(remeasure=4).tuner.remeasure == 4


def test_smallest_job_is_name_and_tasks_and_tunes_with_xgb(tmp_path: Path) -> None:
    job = load_job(write(tmp_path, "name: s\ntasks:\n  - template: dense.x86\n    args: [8, 8, 8]\n"))
    assert job.tuner == TunerSpec(kind="xgb", n_trial=DEFAULT_N_TRIAL) and DEFAULT_N_TRIAL == 200
    assert job.target == Target("llvm") and job.builder == BuilderSpec() and job.runner == RunnerSpec()
    ga = load_job(write(tmp_path, "name: s\ntasks: [{template: dense.x86}]\ntuner: {kind: ga}\n"))
    assert (ga.tuner.kind, ga.tuner.n_trial) == ("ga", DEFAULT_N_TRIAL)


def test_numbers_written_with_an_exponent_are_numbers(tmp_path: Path) -> None:
    job = load_job(write(tmp_path, GOOD.replace("min_repeat_ms: 0.5", "min_repeat_ms: 5E-1, timeout: 1e3")))
    assert (job.runner.timing.min_repeat_ms, job.runner.timing.timeout) == (0.5, 1000.0)
    with pytest.raises(JobError, match=r":10: tuner.n_trial: expected an integer, got '1e3'$"):
        load_job(write(tmp_path, GOOD.replace("n_trial: 20", "n_trial: 1e3")))
