"""A network job on a real two-node Ray cluster: rounds of different tasks measured at once, one per
node, the budget spent exactly as the task scheduler spends it, the driver's log valid and
resumable, and every config accounted for when a node is killed mid-tune."""

from __future__ import annotations

import itertools
import logging
from collections import Counter
from pathlib import Path

import pytest

from tunecli.engine.actions.job_file import tune_job
from tunecli.engine.actions.tune import TuneSummary
from tunecli.engine.cluster import cluster_measure_option
from tunecli.engine.cluster.local_cluster import LocalRayCluster
from tunecli.engine.cluster.ray_runner import ChunkRecord
from tunecli.engine.log.record import read_log
from tunecli.engine.measure import TimingOptions
from tunecli.engine.ops import registry  # noqa: F401  (registers the built-in templates)
from tunecli.engine.target import Target
from tunecli.engine.task.task import create
from tunecli.engine.tuner.task_scheduler import TaskScheduler
from tunecli.engine.tuner.tuner_kinds import tuner_kind

from .conftest import RESOURCE, KillNode
from .test_ray_tuning import configs_in, write_job


def network_job(tmp_path: Path, address: str, budget: int) -> Path:
    from tests.engine.job.tiny_network import write_tiny_onnx

    onnx = write_tiny_onnx(tmp_path / "tiny.onnx")
    return write_job(tmp_path, address, model=f"{{onnx: {onnx}}}",
                     tuner=f"{{kind: random, budget: {budget}, seed: 0}}")


def trials_in(log: Path, summary: TuneSummary) -> Counter:
    """How often each config of the job's tasks is in the log (not the untuned configs of operators
    the job does not tune, which tune also logs)."""
    tasks = {(t.template, str(tuple(t.args))) for t in summary.tasks}
    return Counter({key: n for key, n in configs_in(log).items() if key[:2] in tasks})


def at_once(chunks: list[ChunkRecord]) -> list[tuple[ChunkRecord, ChunkRecord]]:
    """Pairs of chunks of two different tasks that were in flight at the same time."""
    return [(a, b) for a, b in itertools.combinations(chunks, 2)
            if a.sent < b.back and b.sent < a.back and a.task != b.task]


@pytest.mark.slow
def test_rounds_of_two_tasks_are_measured_at_once_on_the_two_nodes(ray_cluster: LocalRayCluster) -> None:
    target = Target("llvm")
    tasks = [create("tutorial/matmul", (16, 16, 16, "float32"), target),
             create("tutorial/matmul", (32, 16, 16, "float32"), target)]
    option = cluster_measure_option(ray_cluster.address, builders=1, timing=TimingOptions(number=1, repeat=1))
    random = tuner_kind("random")
    scheduler = TaskScheduler(tasks, lambda t: random.make(t, seed=0), budget=16, policy="round-robin",
                              round_trials=4)
    logged = []
    try:
        scheduler.tune(option, callbacks=[lambda _tuner, ins, res: logged.extend(zip(ins, res, strict=True))])
        chunks = list(option["runner"].chunks)
        nodes = option["runner"].concurrent_lanes(tasks[0])
    finally:
        option["runner"].close()
    # round-robin among the tasks without a round in flight: a node that is done first takes the
    # next round of the task it is free for, so the shares follow the nodes' speeds
    assert scheduler.spent == 16 and all(t.trials >= 4 for t in scheduler.tasks)
    assert len(logged) == 16 and all(res.ok for _, res in logged)
    assert len({(inp.task.args, inp.config.index) for inp, _ in logged}) == 16
    assert len(nodes) >= 2 and sum(c.configs for c in chunks) == 16
    assert all(c.outcome == "measured" and c.lanes == (c.node,) for c in chunks)  # each round on its node
    both = at_once(chunks)
    assert both, chunks
    assert all(a.node != b.node for a, b in both)


@pytest.mark.slow
def test_a_network_job_spends_its_budget_exactly_with_rounds_at_once_and_resumes(
        ray_cluster: LocalRayCluster, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    job = network_job(tmp_path, ray_cluster.address, budget=18)
    with caplog.at_level(logging.DEBUG, logger="autotvm"):
        summary = tune_job(str(job))
    chunks = [r.chunk for r in caplog.records if isinstance(getattr(r, "chunk", None), ChunkRecord)]
    log = tmp_path / "on-ray.log"
    assert len(summary.tasks) >= 3 and summary.ok
    assert sum(t.measured for t in summary.tasks) == 18
    counts = trials_in(log, summary)
    assert sum(counts.values()) == 18 and max(counts.values()) == 1
    assert all(r.result.ok for r in read_log(log))
    rounds = [c for c in chunks if c.lanes]  # past the untuned configs (measured by the runner as a whole)
    assert sum(c.configs for c in rounds) == 18 - len(summary.tasks)  # the untuned config of each
    assert at_once(rounds)  # two tasks' rounds in flight at the same time

    summary = tune_job(str(job))  # the same budget: nothing left to do
    assert sum(t.measured for t in summary.tasks) == 0 and sum(t.previous for t in summary.tasks) == 18
    more = network_job(tmp_path, ray_cluster.address, budget=24)
    summary = tune_job(str(more))
    assert sum(t.previous for t in summary.tasks) == 18 and sum(t.measured for t in summary.tasks) == 6
    counts = trials_in(log, summary)
    assert sum(counts.values()) == 24 and max(counts.values()) == 1


@pytest.mark.slow
def test_a_node_killed_while_rounds_run_at_once_loses_no_config(ray_cluster: LocalRayCluster, tmp_path: Path,
                                                                caplog: pytest.LogCaptureFixture) -> None:
    doomed = ray_cluster.add_node("doomed-net", {RESOURCE: 1})
    ray_cluster.wait_nodes(3)
    job = network_job(tmp_path, ray_cluster.address, budget=24)
    kill = KillNode(ray_cluster, doomed, lambda event, seen: seen == event.n_tasks + 2)  # rounds running
    with caplog.at_level(logging.WARNING, logger="autotvm"):
        summary = tune_job(str(job), on_event=kill)
    assert kill.killed.is_set()
    log = tmp_path / "on-ray.log"
    counts = trials_in(log, summary)
    assert sum(t.measured for t in summary.tasks) == 24 == sum(counts.values())
    assert max(counts.values()) == 1  # measured, or an error record: each config once
    assert any("was lost" in m and "sent to another worker" in m for m in caplog.messages), caplog.messages
    errors = [r for r in read_log(log) if not r.result.ok]
    assert all("Ray worker" in str(r.result.error_message) for r in errors)
    more = network_job(tmp_path, ray_cluster.address, budget=27)
    summary = tune_job(str(more))  # resumable on the nodes left
    assert sum(t.previous for t in summary.tasks) == 24 and sum(t.measured for t in summary.tasks) == 3
    assert max(configs_in(log).values()) == 1
