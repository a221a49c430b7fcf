"""``tunecli tune --cluster ADDRESS``: the job's configs built and timed on a Ray cluster's nodes."""

from __future__ import annotations

import json
import signal
import subprocess
import time

import pytest

from tests.engine.cluster.conftest import ray_head  # noqa: F401  (the real cluster fixture)
from tunecli.engine.cluster.local_cluster import LocalRayCluster, free_port

from .conftest import TUNECLI, Invoke


def test_a_cluster_whose_head_cannot_be_reached_is_one_error_naming_it(invoke: Invoke, tiny_job) -> None:
    job, log = tiny_job()
    address = f"127.0.0.1:{free_port()}"
    result = invoke("tune", job, "--cluster", address)
    assert result.exit_code == 1
    assert (f"error: the head of the Ray cluster at {address} cannot be reached: Connection refused"
            in result.stderr)
    assert not log.exists() or log.read_text() == ""


def test_a_bad_cluster_address_is_a_usage_error(invoke: Invoke, tiny_job) -> None:
    job, _ = tiny_job()
    result = invoke("tune", job, "--cluster", "head.example")
    assert result.exit_code == 2
    assert "head.example: expected auto, ray://HOST:10001 or HOST:6379" in result.stderr


@pytest.mark.slow  # a head of its own (tests/engine/cluster has the fast smoke test)
def test_tune_on_a_cluster_writes_the_log_here(invoke: Invoke, tiny_job, ray_head: LocalRayCluster) -> None:  # noqa: F811
    job, log = tiny_job(n_trial=3, n_parallel=1)
    result = invoke("tune", job, "--cluster", ray_head.address, "--json")
    assert result.exit_code == 0, result.output
    (task,) = json.loads(result.stdout)["tasks"]
    assert task["measured"] == 3 and task["errors"] == 0 and task["ok"]
    assert len(log.read_text().splitlines()) == 3


@pytest.mark.slow
def test_tune_through_the_ray_client_address(invoke: Invoke, tiny_job, ray_head: LocalRayCluster) -> None:  # noqa: F811
    job, log = tiny_job(n_trial=2, n_parallel=1)
    result = invoke("tune", job, "--cluster", ray_head.client_address, "--json")
    assert result.exit_code == 0, result.output
    assert len(log.read_text().splitlines()) == 2


@pytest.mark.slow
def test_a_killed_cluster_tune_is_interrupted_and_keeps_every_measurement(
        invoke: Invoke, tiny_job, ray_head: LocalRayCluster) -> None:  # noqa: F811
    # kill (SIGTERM) after joining the cluster, whose Ray installs a handler of its own that ends the
    # driver at once: the tune is interrupted as Ctrl-C interrupts it, exit code 130
    job, log = tiny_job(n_trial=40, min_repeat_ms=50, n_parallel=1)
    proc = subprocess.Popen([str(TUNECLI), "tune", job, "--cluster", ray_head.address, "--quiet"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.time() + 120
        while time.time() < deadline and proc.poll() is None and not (log.exists() and log.read_text()):
            time.sleep(0.05)
        assert proc.poll() is None, "tune ended before it could be killed"
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err
    assert err.endswith("interrupted: the finished measurements are in the log; run the same command "
                        "again to resume\n"), err
    kept = [json.loads(line)["config"]["index"] for line in log.read_text().splitlines()]
    assert 1 <= len(kept) < 40
    result = invoke("tune", job, "--cluster", ray_head.address, "--n-trial", str(len(kept) + 1), "--json")
    assert result.exit_code == 0, result.output
    (task,) = json.loads(result.stdout)["tasks"]
    assert (task["previous"], task["measured"]) == (len(kept), 1)
