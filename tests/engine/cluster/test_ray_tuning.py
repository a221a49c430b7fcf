"""Tuning on a real Ray cluster on 127.0.0.1: the driver writes the log, the nodes build and time.

Every config the tuner proposes comes back once (measured, an error record, or sent again when its
node was lost); a head that cannot be reached or nodes with other software stop the tune with one
clear error before anything is measured; the log stays the local format and resumes.
"""

from __future__ import annotations

import logging
import socket
import textwrap
from collections import Counter
from pathlib import Path

import pytest

from tunecli.engine.actions.job_file import tune_job
from tunecli.engine.cluster import ClusterError, ClusterUnreachableError, ClusterVersionError, connection
from tunecli.engine.cluster.connection import RayCluster
from tunecli.engine.cluster.local_cluster import LocalRayCluster, free_port
from tunecli.engine.cluster.node_info import software_versions
from tunecli.engine.log.record import read_log
from tunecli.engine.measure import TimingOptions
from tunecli.engine.runtime.threads import get_num_threads
from tunecli.engine.target import Target, host_cpu

from .conftest import HEAD_ONLY, RESOURCE, KillNode

MATMUL = "[{template: tutorial/matmul, args: [16, 16, 16]}]"


def write_job(tmp_path: Path, address: str, n_trial: int = 4, tasks: str = MATMUL, model: str = "",
              tuner: str = "") -> Path:
    job = tmp_path / "job.yaml"
    what = f"model: {model}" if model else f"tasks: {tasks}"
    job.write_text(textwrap.dedent(f"""\
        name: on-ray
        log: {tmp_path / 'on-ray.log'}
        {what}
        tuner: {tuner or f'{{kind: random, n_trial: {n_trial}, seed: 0}}'}
        measure:
          builder: {{n_parallel: 1}}
          runner: {{number: 1, repeat: 1}}
        cluster: {{kind: ray, address: "{address}"}}
        """))
    return job


def configs_in(log: Path) -> Counter:
    """How often each (workload, config index) is in the log."""
    return Counter((r.inp.task.name, str(r.inp.task.args), r.inp.config.index) for r in read_log(log))


def test_a_kernel_job_is_tuned_on_the_cluster_and_resumes(ray_head: LocalRayCluster, tmp_path: Path) -> None:
    job = write_job(tmp_path, ray_head.address, n_trial=4)
    (task,) = tune_job(str(job)).tasks
    assert (task.previous, task.measured, task.errors) == (0, 4, 0)
    log = tmp_path / "on-ray.log"
    records = list(read_log(log))
    assert len(records) == 4 and all(r.result.ok for r in records)
    assert {str(r.inp.target) for r in records} == {"llvm"}
    assert max(configs_in(log).values()) == 1

    (task,) = tune_job(str(job), n_trial=6).tasks  # resumes from the log the driver wrote
    assert (task.previous, task.measured) == (4, 2)
    assert sum(configs_in(log).values()) == 6 and max(configs_in(log).values()) == 1


def test_a_head_that_cannot_be_reached_stops_the_tune_with_its_address(tmp_path: Path) -> None:
    address = f"127.0.0.1:{free_port()}"
    log = tmp_path / "on-ray.log"
    log.write_text("")
    job = write_job(tmp_path, address)
    with pytest.raises(ClusterUnreachableError, match=rf"{address} cannot be reached"):
        tune_job(str(job))
    assert log.read_text() == ""


@pytest.mark.timeout(60)
def test_an_address_where_no_ray_head_answers_is_one_error_not_a_hang(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("ray", reason="Ray is not installed (extra tunecli[ray])")
    monkeypatch.setattr(connection, "CONNECT_TIMEOUT", 2.0)
    with socket.socket() as silent:  # accepts connections (the kernel's backlog), never answers
        silent.bind(("127.0.0.1", 0))
        silent.listen(4)
        address = f"127.0.0.1:{silent.getsockname()[1]}"
        job = write_job(tmp_path, address)
        with pytest.raises(ClusterUnreachableError, match=rf"{address} accepts connections but does not "
                           r"answer as a Ray head .*6379 by default.*ray://HOST:PORT"):
            tune_job(str(job))
    assert not (tmp_path / "on-ray.log").exists() or (tmp_path / "on-ray.log").read_text() == ""


def test_no_node_offering_the_resource_is_one_error(ray_head: LocalRayCluster) -> None:
    cluster = RayCluster(ray_head.address, {"tunecli-cpu-nosuchcpu": 1})
    with pytest.raises(ClusterError, match="no node .* offers .*tunecli-cpu-nosuchcpu"):
        cluster.connect(Target("llvm"))
    assert cluster.slots == []


@pytest.mark.slow
def test_workers_held_by_another_tune_are_waited_for_with_a_warning_then_one_error(
        ray_head: LocalRayCluster, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.setattr(connection, "WAIT_NOTICE", 1.0)
    monkeypatch.setattr(connection, "START_TIMEOUT", 4.0)
    first = RayCluster(ray_head.address, {HEAD_ONLY: 1}, builders=1)  # a tune holding the head's worker
    first.connect(Target("llvm"))
    try:
        second = RayCluster(ray_head.address, {HEAD_ONLY: 1}, builders=1)
        refused = r"no measuring worker started within 4 s \(is another tune"
        with caplog.at_level(logging.WARNING, logger="autotvm"), pytest.raises(ClusterError, match=refused):
            second.connect(Target("llvm"))
        assert second.slots == []
    finally:
        first.close()
    third = RayCluster(ray_head.address, {HEAD_ONLY: 1}, builders=1)  # the worker waited for is gone
    try:
        third.connect(Target("llvm"))
        assert len(third.slots) == 1
    finally:
        third.close()
    waited = [m for m in caplog.messages if m.startswith("waiting up to 4 s for 1 measuring worker(s)")]
    assert len(waited) == 1, caplog.messages
    assert "held by other work on the cluster (another tune?)" in waited[0]


@pytest.mark.parametrize("package", ["tunecli", "llvmlite"])
def test_nodes_with_other_software_are_refused_before_measuring(ray_head: LocalRayCluster,
                                                                package: str) -> None:
    ours = dict(software_versions())
    driver = tuple((name, "99.0" if name == package else version) for name, version in ours.items())
    cluster = RayCluster(ray_head.address, versions=driver)  # a driver upgraded, nodes left behind
    with pytest.raises(ClusterVersionError, match=rf"{package} {ours[package]} \(driver: 99\.0\)"):
        cluster.connect(Target("llvm"))
    assert cluster.slots == []


@pytest.mark.slow
def test_a_node_timing_with_other_threads_is_not_used(ray_head: LocalRayCluster,
                                                      caplog: pytest.LogCaptureFixture) -> None:
    odd = ray_head.add_node("one-thread", {RESOURCE: 1}, env={"TUNECLI_NUM_THREADS": "1"})
    try:
        ray_head.wait_nodes(len(ray_head.nodes) - len(ray_head.killed))
        cluster = RayCluster(ray_head.address, {RESOURCE: 1}, builders=1)
        with caplog.at_level(logging.WARNING, logger="autotvm"):
            cluster.connect(Target("llvm -mcpu=" + host_cpu()))
        try:
            threads = {slot.node.threads for slot in cluster.slots}
        finally:
            cluster.close()
    finally:
        ray_head.kill_node(odd)
    assert threads == {get_num_threads()}  # the nodes that time as this machine
    assert any("times kernels with 1 threads, not" in m and "not used" in m for m in caplog.messages), \
        caplog.messages


@pytest.mark.slow
def test_a_batch_is_spread_over_the_nodes(ray_cluster: LocalRayCluster) -> None:
    from tunecli.engine.cluster import cluster_measure_option
    from tunecli.engine.ops import registry  # noqa: F401  (registers the built-in templates)
    from tunecli.engine.task.task import create
    from tunecli.engine.tuner.tuner_kinds import tuner_kind

    option = cluster_measure_option(ray_cluster.address, builders=1, timing=TimingOptions(number=1, repeat=1))
    task = create("tutorial/matmul", (16, 16, 16, "float32"), Target("llvm"))
    got = []
    try:
        tuner_kind("random").make(task, seed=1).tune(
            n_trial=6, measure_option=option, callbacks=[lambda _t, inputs, results: got.extend(results)])
        nodes = {slot.node.node_id for slot in option["runner"].cluster.slots}
        assert option["builder"].n_parallel == 2  # one config at a time on each of the two nodes
    finally:
        option["runner"].close()
    assert len(nodes) == 2
    assert len(got) == 6 and all(r.ok for r in got)


@pytest.mark.slow
def test_a_network_job_is_tuned_on_the_cluster(ray_cluster: LocalRayCluster, tmp_path: Path) -> None:
    from tests.engine.job.tiny_network import write_tiny_onnx

    onnx = write_tiny_onnx(tmp_path / "tiny.onnx")
    job = write_job(tmp_path, ray_cluster.address, model=f"{{onnx: {onnx}}}",
                    tuner="{kind: random, budget: 6, seed: 0}")
    summary = tune_job(str(job))
    assert len(summary.tasks) >= 3 and summary.ok  # two convolutions and a dense layer (and alternatives)
    assert sum(t.measured for t in summary.tasks) == 6
    assert max(configs_in(tmp_path / "on-ray.log").values()) == 1


@pytest.mark.slow
def test_a_node_killed_mid_tune_loses_no_config(ray_cluster: LocalRayCluster, tmp_path: Path,
                                                caplog: pytest.LogCaptureFixture) -> None:
    doomed = ray_cluster.add_node("doomed", {RESOURCE: 1})
    ray_cluster.wait_nodes(3)
    job = write_job(tmp_path, ray_cluster.address, n_trial=12)
    kill = KillNode(ray_cluster, doomed)  # after the first result
    with caplog.at_level(logging.WARNING, logger="autotvm"):
        (task,) = tune_job(str(job), on_event=kill).tasks
    assert kill.killed.is_set()
    assert any("was lost" in m and "sent to another worker" in m for m in caplog.messages), caplog.messages
    told = [m for m in caplog.messages if "was lost" in m or "no measuring worker started" in m]
    assert "was lost" in told[0], told  # the loss first, then any replacement that did not start
    log = tmp_path / "on-ray.log"
    counts = configs_in(log)
    assert task.measured == 12 and sum(counts.values()) == 12 and max(counts.values()) == 1
    (task,) = tune_job(str(job), n_trial=14).tasks  # resumable: the survivors go on
    assert (task.previous, task.measured) == (12, 2)
    assert max(configs_in(log).values()) == 1


@pytest.mark.slow
def test_a_head_lost_mid_tune_is_one_error_and_the_log_resumes(ray_head: LocalRayCluster,
                                                               tmp_path: Path) -> None:
    cluster = LocalRayCluster({RESOURCE: 1})
    try:
        cluster.start(workers=1)
    except ClusterError as err:
        pytest.skip(f"a Ray cluster cannot start on this machine: {err}")
    try:
        job = write_job(tmp_path, cluster.address, n_trial=40)
        kill_the_head = KillNode(cluster, cluster.nodes[0], lambda _event, seen: seen == 2)
        with pytest.raises(ClusterUnreachableError, match=rf"lost the Ray cluster at {cluster.address}"):
            tune_job(str(job), on_event=kill_the_head)
    finally:
        cluster.stop()
    log = tmp_path / "on-ray.log"
    counts = configs_in(log)
    assert sum(counts.values()) >= 2 and max(counts.values()) == 1
    assert all(r.result.ok for r in read_log(log))
    kept = sum(counts.values())  # the same job goes on on another cluster
    (task,) = tune_job(str(job), n_trial=kept + 2, cluster=ray_head.address).tasks
    assert (task.previous, task.measured) == (kept, 2)
    assert max(configs_in(log).values()) == 1
