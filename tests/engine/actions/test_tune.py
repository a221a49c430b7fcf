"""Resuming a tune from its log: only the records of each task (workload, target, config) count."""

from __future__ import annotations

import json
import textwrap
from collections import Counter
from pathlib import Path

import pytest

from tunecli.engine.actions.job_file import tune_job
from tunecli.engine.actions.tune import TaskOutcome, TuneEvent, TuneSummary
from tunecli.engine.log.best_of_logs import best_of_logs
from tunecli.engine.log.history_best import ApplyHistoryBest
from tunecli.engine.log.layout_choice import MARGIN
from tunecli.engine.log.plausibility import plausible
from tunecli.engine.log.record import encode, load_from_file, read_log
from tunecli.engine.measure import LocalBuilder, LocalRunner, measure_option
from tunecli.engine.measure.result import MeasureInput, MeasureResult
from tunecli.engine.ops import registry  # noqa: F401  (registers the built-in templates)
from tunecli.engine.target import Target
from tunecli.engine.task.task import create
from tunecli.engine.tuner.tuner import make_measure_batch

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


MATMUL_TASK = "[{template: tutorial/matmul, args: [16, 16, 16]}]"


def write_job(tmp_path: Path, log: Path, tuner: str, tasks: str = MATMUL_TASK, name: str = "job") -> str:
    job = tmp_path / f"{name}.yaml"
    job.write_text(textwrap.dedent(f"""\
        name: {name}
        log: {log}
        tasks: {tasks}
        tuner: {tuner}
        measure:
          builder: {{n_parallel: 1}}
          runner: {{number: 1, repeat: 1}}
        """))
    return str(job)


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
    events: list[TuneEvent] = []
    (outcome,) = tune_job(str(job), on_event=events.append).tasks
    assert outcome.previous == 2 and outcome.measured == 3 and outcome.remeasured == 0
    assert "remeasure" not in {e.kind for e in events}  # off unless the job asks
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
    # each task's untuned config first, then rounds of 2: a b a b
    assert [(t.measured, t.weight) for t in summary.tasks] == [(5, 1.0), (5, 3.0)]
    assert summary.weighted_latency == summary.tasks[0].best_cost + 3 * summary.tasks[1].best_cost
    order = [inp.task.name for inp, _ in load_from_file(log)]
    assert order == ["tutorial/matmul", "dense.x86"] + (["tutorial/matmul"] * 2 + ["dense.x86"] * 2) * 2


def lowest(records: list[tuple]) -> dict[int, float]:
    """Config index -> its lowest valid cost."""
    out: dict[int, float] = {}
    for inp, res in records:
        if res.ok:
            out[inp.config.index] = min(out.get(inp.config.index, float("inf")), res.mean_cost)
    return out


def ranked(best: dict[int, float]) -> list[int]:
    """Config indices, fastest first; equal costs (timer resolution) by config index."""
    return sorted(best, key=lambda index: (best[index], index))


def test_remeasure_appends_the_k_best_configs_once_and_not_as_trials(tmp_path: Path) -> None:
    log = tmp_path / "re.log"
    job = write_job(tmp_path, log, "{kind: random, n_trial: 5, seed: 0, remeasure: 3}")
    events: list[TuneEvent] = []
    summary = tune_job(job, on_event=events.append)
    (outcome,) = summary.tasks
    assert (outcome.previous, outcome.measured, outcome.remeasured, summary.remeasure) == (0, 5, 3, 3)
    records = list(load_from_file(log))
    trials = lowest(records[:5])
    assert len(records) == 8 and len(trials) == 5
    assert [inp.config.index for inp, _ in records[5:]] == ranked(trials)[:3]
    assert [e.remeasuring for e in events if e.kind == "remeasure"] == [3]
    assert events[-1].kind == "end" and events[-1].done == 5  # re-measurements are not trials
    assert outcome.best_cost == min(lowest(records).values())

    (again,) = tune_job(job).tasks  # resumed: done, and already re-measured
    assert (again.previous, again.measured, again.remeasured) == (5, 0, 0)
    assert len(list(load_from_file(log))) == 8

    (more,) = tune_job(job, n_trial=8).tasks  # 3 more trials; only new configs among the 3 best
    records = list(load_from_file(log))
    assert (more.previous, more.measured) == (5, 3)
    assert len(records) == 8 + 3 + more.remeasured
    per_config = Counter(inp.config.index for inp, _ in records)
    best = lowest(records)
    assert max(per_config.values()) == 2 and len(per_config) == 8
    assert all(per_config[index] == 2 for index in ranked(best)[:3])


def test_remeasure_with_a_budget_comes_after_the_budget(tmp_path: Path) -> None:
    log = tmp_path / "budget.log"
    tasks = "[{template: tutorial/matmul, args: [16, 16, 16]}, {template: dense.x86, args: [8, 16, 4]}]"
    job = write_job(tmp_path, log, "{kind: xgb, budget: 6, task_scheduler: round-robin, seed: 0, "
                    "plan_size: 2, remeasure: 1}", tasks)
    summary = tune_job(job)
    # each task's untuned config, then rounds of 2: a b
    assert [(t.measured, t.remeasured) for t in summary.tasks] == [(3, 1), (3, 1)]
    records = list(load_from_file(log))
    assert len(records) == 8
    for task, (inp, _) in zip(("tutorial/matmul", "dense.x86"), records[6:], strict=True):
        assert inp.task.name == task
        best = lowest([(i, r) for i, r in records[:6] if i.task.name == task])
        assert inp.config.index == ranked(best)[0]
    resumed = tune_job(job)  # the budget is spent: re-measurements did not count toward it
    assert [(t.previous, t.measured, t.remeasured) for t in resumed.tasks] == [(3, 0, 0), (3, 0, 0)]


def test_remeasuring_corrects_a_choice_made_under_load(tmp_path: Path) -> None:
    """The truly fastest config was logged at an inflated time (a load spike); re-measured, it wins."""
    task = create("tutorial/matmul", (128, 128, 128, "float32"), "llvm")
    n = len(task.config_space)
    option = measure_option(LocalBuilder(n_parallel=1), LocalRunner(number=2, repeat=2, cooldown_interval=0))
    try:
        spread = range(0, n, n // 8 + 1)  # a diagonal through the tile_y x tile_x grid
        tried = [MeasureInput(task.target, task, task.config_space.get(i)) for i in spread]
        results = make_measure_batch(task, option)(tried)
    finally:
        option["builder"].close()
        option["runner"].close()
    assert all(r.ok for r in results)
    ranked = sorted(zip(tried, results, strict=True), key=lambda pair: pair[1].mean_cost)
    (fast_inp, fast_res), (slow_inp, slow_res) = ranked[0], ranked[-1]  # the fastest and slowest tried
    inputs = [fast_inp, slow_inp]
    fast, slow = fast_inp.config.index, slow_inp.config.index
    assert fast_res.mean_cost * 3 < slow_res.mean_cost
    inflated = fast_res._replace(costs=(2 * slow_res.mean_cost,))
    log = tmp_path / "loaded.log"
    log.write_text(encode(inputs[0], inflated) + "\n" + encode(inputs[1], slow_res) + "\n")
    assert best_of_logs([str(log)]).workloads[0].best[0].index == slow

    job = write_job(tmp_path, log, "{kind: random, n_trial: 2, seed: 0, remeasure: 2}",
                    "[{template: tutorial/matmul, args: [128, 128, 128]}]")
    (outcome,) = tune_job(job).tasks
    assert (outcome.measured, outcome.remeasured, outcome.best_index) == (0, 2, fast)
    report = best_of_logs([str(log)], top=2)
    assert [entry.index for entry in report.workloads[0].best] == [fast, slow]  # each config once


def test_the_weighted_latency_counts_alternatives_of_an_operator_once() -> None:
    def outcome(index: int, cost: float | None, weight: float) -> TaskOutcome:
        return TaskOutcome(index, "t", [], 1.0, 10, 10, best_cost=cost,
                           best_index=None if cost is None else 0, weight=weight)

    summary = TuneSummary("j", "j.log", "llvm", "xgb", 0, alternatives=[[0, 1]])
    summary.tasks = [outcome(0, 3e-3, 4), outcome(1, 2e-3, 4), outcome(2, 1e-3, 1)]
    assert summary.weighted_latency == pytest.approx(4 * 2e-3 + 1e-3)  # a build runs the faster of 0, 1
    summary.tasks[1] = outcome(1, None, 4)  # the alternative without a config is not run
    assert summary.weighted_latency == pytest.approx(4 * 3e-3 + 1e-3)
    assert summary.ok and summary.unconfigured() == []  # the operator runs task 0
    summary.tasks[0] = outcome(0, None, 4)
    assert summary.weighted_latency is None
    assert not summary.ok and [t.index for t in summary.unconfigured()] == [0, 1]
    assert summary.as_dict()["alternatives"] == [[0, 1]]
    summary.alternatives = []
    summary.tasks[0] = outcome(0, 3e-3, 4)
    assert not summary.ok and [t.index for t in summary.unconfigured()] == [1]  # alone, task 1 is needed


def test_a_short_tune_of_a_network_measures_each_untuned_config_first(tmp_path: Path) -> None:
    """Two trials per task: the first is the config the untuned build runs, so the log's best of
    every task (what apply_history_best builds with) is no slower than the untuned build's."""
    pytest.importorskip("onnx")
    from tests.engine.job.tiny_network import INPUT, SHAPE, write_tiny_onnx
    from tunecli.engine.job.network import job_tasks, load_network
    from tunecli.engine.job.spec import load_job
    from tunecli.engine.tuner.untuned import untuned_config, untuned_implementations

    onnx = write_tiny_onnx(tmp_path / "tiny.onnx")
    log = tmp_path / "net.log"
    job = tmp_path / "net.yaml"
    job.write_text(textwrap.dedent(f"""\
        name: net
        log: {log}
        model: {{onnx: {onnx}, input: {{{INPUT}: [{', '.join(map(str, SHAPE))}]}}}}
        tuner: {{kind: random, n_trial: 2, seed: 0}}
        measure:
          builder: {{n_parallel: 2}}
          runner: {{number: 1, repeat: 1}}
        """))
    summary = tune_job(str(job))
    assert [t.measured for t in summary.tasks] == [2, 2, 2, 2]  # two convolutions, dense.x86, dense_pack.x86
    records = list(load_from_file(log))
    tasks, _ = job_tasks(load_job(str(job)))
    for task in tasks:
        untuned = untuned_config(task)
        assert untuned is not None and untuned.exact
        mine = [(inp, res) for inp, res in records if inp.task.workload == task.workload]
        assert int(mine[0][0].config.index) == untuned.config.index  # measured first
        assert mine[0][0].config.untuned == untuned.source  # and marked so in the log
        with task.target:
            applied = ApplyHistoryBest([(r.inp, r.result) for r in plausible(read_log(log))],
                                       pretuned=False).query(task.target, task.workload)
        assert applied.cost is not None and applied.cost <= mine[0][1].mean_cost  # apply's pick: no slower
        fastest = min(res.mean_cost for _, res in mine if res.ok)
        if fastest >= mine[0][1].mean_cost * (1 - MARGIN):  # no record clearly faster: the untuned config
            assert int(applied.index) == untuned.config.index

    # what the untuned build runs in operators the job does not tune (the Winograd kernels of the
    # 3x3 convolutions) is measured too: the tuned build compares its tuned kernel with it
    network = load_network(load_job(str(job)))
    others = untuned_implementations(network.mod, network.params, Target("llvm"), {t.workload for t in tasks})
    assert [t.name for t in others] == ["conv2d_NCHWc_winograd.x86"] * 2  # both 3x3 convolutions
    for other in others:
        [winograd] = [inp for inp, _ in records if inp.task.workload == other.workload]
        assert int(winograd.config.index) == untuned_config(other).config.index

    again = tune_job(str(job))  # resumed: the untuned configs are in the log, nothing is measured twice
    assert [t.measured for t in again.tasks] == [0] * 4 and len(list(load_from_file(log))) == len(records)


def test_a_task_whose_log_holds_its_untuned_config_is_not_given_it_again(tmp_path: Path) -> None:
    from tunecli.engine.tuner.untuned import untuned_config

    task = create(*DENSE, "llvm")
    untuned = untuned_config(task)
    assert untuned is not None
    log = tmp_path / "dense.log"
    log.write_text(record(DENSE, "llvm", untuned.config.index) + "\n")
    job = write_job(tmp_path, log, "{kind: random, n_trial: 3, seed: 0}",
                    "[{template: dense.x86, args: [8, 16, 4]}]")
    (outcome,) = tune_job(job).tasks
    assert (outcome.previous, outcome.measured) == (1, 2)
    indices = [int(inp.config.index) for inp, _ in load_from_file(log)]
    assert indices[0] == untuned.config.index and len(set(indices)) == 3


def test_rematch_measures_an_untuned_config_beaten_by_the_margin_again_beside_its_challenger(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``tuner.rematch``: a log whose untuned record was timed in a busy moment (20 s) and whose
    challenger's in a quiet one (10 s) gets both measured again, counted apart from trials; the
    resumed tune does not measure them a third time."""
    from tunecli.engine.log import tophub
    from tunecli.engine.tuner.untuned import untuned_config

    monkeypatch.setenv(tophub.ENV_VAR, tophub.DISABLED)
    task = create(*DENSE, "llvm")
    untuned = untuned_config(task)
    assert untuned is not None
    challenger = next(i for i in range(len(task.config_space))
                      if i != untuned.config.index and task.config_space.is_index_valid(i))
    log = tmp_path / "rematch.log"
    logged = ((untuned.config, 20.0), (task.config_space.get(challenger), 10.0))
    log.write_text("".join(encode(MeasureInput(task.target, task, config),
                                  MeasureResult((cost,), 0, 0.1, 0.0)) + "\n" for config, cost in logged))
    job = write_job(tmp_path, log, "{kind: random, n_trial: 2, seed: 0, rematch: true}",
                    tasks="[{template: dense.x86, args: [8, 16, 4]}]")
    (outcome,) = tune_job(job).tasks
    records = list(load_from_file(log))
    again = [int(inp.config.index) for inp, _ in records[2:]]
    assert (outcome.previous, outcome.measured, outcome.remeasured) == (2, 0, len(again))
    assert again[:2] == [untuned.config.index, challenger] and len(again) % 2 == 0
    assert all(res.ok and res.mean_cost < 1.0 for _, res in records[2:])
    (resumed,) = tune_job(job).tasks
    assert resumed.remeasured == 0 and len(list(load_from_file(log))) == len(records)
