"""``scripts/gpu_check.py`` without a GPU: its dry run goes through every stage up to the launch, and
its table (``gpu_check.md``, ``gpu_check.json``) is on disk after every stage, so a run cut short
(killed, or out of budget) still reports the stages it finished."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from tunecli.engine.codegen.nvptx_backend import ptxas_path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "gpu_check.py"
sys.path.insert(0, str(ROOT / "scripts"))

from gpu_stages.configs import vector_add  # noqa: E402
from gpu_stages.context import CheckFailed, Context  # noqa: E402
from gpu_stages.kernels import build_kernel, inspect, ptxas  # noqa: E402
from gpu_stages.table import Row, Table  # noqa: E402

needs_ptxas = pytest.mark.skipif(ptxas_path() is None, reason="ptxas (nvidia-cuda-nvcc) is not installed")


def start(out: Path, *args: str) -> subprocess.Popen:
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    env.pop("OUT", None)
    command = [sys.executable, str(SCRIPT), "--dry-run", "--seed", "0", "--out", str(out), *args]
    return subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
                            cwd=ROOT)


def table(out: Path) -> dict:
    return json.loads((out / "gpu_check.json").read_text())


def test_the_table_of_the_finished_stages_is_on_disk_when_the_run_is_killed(tmp_path):
    proc = start(tmp_path, "--stages", "prerequisites,faults,tuning,templates", "--configs", "2")
    deadline = time.monotonic() + 240
    finished: list[str] = []
    while time.monotonic() < deadline and proc.poll() is None:
        if (tmp_path / "gpu_check.json").exists():
            finished = table(tmp_path)["finished_stages"]
            if "faults" in finished:
                break
        time.sleep(0.2)
    proc.send_signal(signal.SIGKILL)
    proc.wait(30)
    assert finished[:2] == ["prerequisites", "faults"], proc.stdout.read() if proc.stdout else ""
    data = table(tmp_path)
    assert data["meta"]["mode"] == "dry run"
    assert "tuning" not in data["finished_stages"]
    stages = {row["stage"] for row in data["rows"]}
    assert {"prerequisites", "faults"} <= stages
    assert all(row["status"] in ("dry-run", "skipped") for row in data["rows"]), data["rows"]
    faults = [row for row in data["rows"] if row["stage"] == "faults"]
    assert [row["check"] for row in faults] == [
        "kernels of the fault checks", "illegal address, then a good kernel",
        "launch beyond limits, then a good kernel"]
    assert "RUNTIME_DEVICE" in faults[1]["numbers"]
    markdown = (tmp_path / "gpu_check.md").read_text()
    assert "| faults | illegal address, then a good kernel | dry-run |" in markdown
    assert "stages finished: prerequisites, faults" in markdown


def test_a_spent_budget_starts_no_stage_and_the_table_says_so(tmp_path):
    proc = start(tmp_path, "--budget-s", "5", "--stages", "smoke,tuning")
    output, _ = proc.communicate(timeout=120)
    assert proc.returncode == 0, output
    rows = [row for row in table(tmp_path)["rows"] if row["stage"] != "prerequisites"]
    assert [(r["stage"], r["status"]) for r in rows] == [("smoke", "skipped"), ("tuning", "skipped")]
    assert "of the budget left" in rows[0]["numbers"]
    assert table(tmp_path)["finished_stages"] == ["smoke", "tuning"]


def test_an_unknown_stage_is_one_clear_error(tmp_path):
    proc = start(tmp_path, "--stages", "smoke,warp")
    output, _ = proc.communicate(timeout=60)
    assert proc.returncode == 2
    assert "unknown stages ['warp']" in output


def test_the_table_rewrites_both_files_and_keeps_pipes_out_of_the_markdown(tmp_path):
    t = Table(tmp_path / "out", {"mode": "dry run"})
    t.add(Row("smoke", "vector add", "ok", "a | b", 1.25))
    t.finish_stage("smoke")
    assert json.loads((tmp_path / "out" / "gpu_check.json").read_text())["rows"][0]["numbers"] == "a | b"
    assert "| smoke | vector add | ok | a / b | 1.2 |" in (tmp_path / "out" / "gpu_check.md").read_text()
    with pytest.raises(ValueError, match="status"):
        t.add(Row("smoke", "x", "fine", "", 0.0))
    assert not list((tmp_path / "out").glob("*.tmp"))


def test_a_check_that_raises_is_a_failed_row_and_the_next_check_runs(tmp_path):
    ctx = Context(tmp_path, True, 60.0, Table(tmp_path), None)
    with ctx.check("smoke", "first") as r:
        raise CheckFailed("off by 3")
    with ctx.check("smoke", "second") as r:
        r.numbers = "fine"
    assert [(row.check, row.status, row.numbers) for row in ctx.table.rows] == [
        ("first", "FAILED", "off by 3"), ("second", "dry-run", "fine")]


@needs_ptxas
def test_the_launch_check_compares_arguments_launch_shape_and_ptxas_figures():
    built = build_kernel(*vector_add(4096), "vadd", "cuda -arch=sm_90")
    a = np.zeros(4096, "float32")
    figures = inspect(built, [a, a], ((4096,), "float32"), "sm_90")
    assert figures["grid"] == (16, 1, 1) and figures["block"] == (256, 1, 1)
    assert figures["shared"] == 0 and 0 < figures["registers"] <= 32
    with pytest.raises(CheckFailed, match="takes"):
        inspect(built, [a, a[:2048]], ((4096,), "float32"), "sm_90")
    with pytest.raises(CheckFailed, match="ptxas"):
        ptxas(b".version 7.8\n.target sm_90\n.address_size 64\nnot ptx", "sm_90")


@pytest.mark.slow
def test_every_stage_runs_up_to_the_launch_without_a_gpu(tmp_path):
    """The whole dry run (a few minutes on two cores): no check fails."""
    proc = start(tmp_path, "--configs", "2", "--smoke-configs", "2", "--budget-s", "3600")
    output, _ = proc.communicate(timeout=1200)
    assert proc.returncode == 0, output
    data = table(tmp_path)
    assert data["finished_stages"] == [
        "prerequisites", "smoke", "faults", "tuning", "templates", "network", "rpc"]
    assert not [row for row in data["rows"] if row["status"] == "FAILED"]


def test_the_wheel_packer_refuses_an_unknown_option_before_touching_anything(tmp_path):
    command = ["bash", str(ROOT / "scripts" / "gpu_wheels.sh"), str(tmp_path / "gpu"), "--wheels"]
    proc = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert proc.returncode == 2 and "unknown option --wheels" in proc.stderr
    assert not (tmp_path / "gpu").exists()


@pytest.mark.slow
def test_the_paths_past_the_launch_run_with_the_cpu_in_the_gpus_place(tmp_path):
    """What only a GPU run reaches (tuning with check_correctness and the best config timed, the
    network run and compared, RPCRunner measuring on the server) runs with target ``llvm`` and the
    CPU as the device: no check fails on the way (about a minute)."""
    from gpu_stages import network, remote, tuning

    import tunecli as tvm
    from tunecli.engine.rpc.tracker import Tracker
    from tunecli.engine.task.task import create

    options = type("Options", (), {"trials": 4, "rpc_trials": 2})()
    ctx = Context(tmp_path, False, 600.0, Table(tmp_path), options, device=tvm.cpu(0), kind="llvm")
    assert tuning.tune(ctx, create(tuning.SEED_TEMPLATE, args=tuning.SEED, target="llvm")) > 0
    network.run(ctx)
    tracker = Tracker("127.0.0.1", 0, 0, token="")
    server, said = remote.start_server(tracker.port)
    try:
        assert any(line.startswith("serving") for line in said) and remote.registered(tracker, 30.0)
        assert "2 of 2 configs measured on the server" in remote.measure(ctx, tracker.port)
    finally:
        server.terminate()
        server.wait(10)
        tracker.stop()
    rows = [(r.check, r.status) for r in ctx.table.rows]
    assert rows == [("4 trials with check_correctness", "ok"), ("best config on fresh inputs", "ok"),
                    ("ResNet-18 built for the GPU", "ok"), ("GPU output = CPU build's output", "ok"),
                    ("PyTorch eager ResNet-18 on the GPU", rows[-1][1])], ctx.table.rows
    assert (tmp_path / "conv2d_cuda.log").stat().st_size > 0
