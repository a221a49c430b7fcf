"""The seed's ARM section end to end: a job for an AArch64 board tuned through a tracker.

The board is ``tunecli server --key rk3399`` on an emulated AArch64 machine (qemu-user, see
``tests/arm_board.py``); the tuner here cross-compiles every config, the board runs it. Skipped
where qemu or the arm64 packages cannot be had.
"""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pytest

from tests.arm_board import AARCH64_NEON, ARM_BOARD, start_arm_server
from tunecli.engine.log.record import load_from_file
from tunecli.engine.measure.result import MeasureErrorNo

pytestmark = pytest.mark.timeout(900)
EM_AARCH64 = 183

ARM_JOB = """\
name: arm
target: {target}
tasks:
{tasks}
tuner: {{kind: {tuner}, n_trial: {n_trial}, seed: 0}}
measure:
  builder: {{timeout: 60, n_parallel: 2}}
  runner: {{kind: rpc, key: {key}, tracker: "127.0.0.1:{port}", number: 2, repeat: 2, min_repeat_ms: 0,
           warmup_ms: 0, timeout: 60}}
"""
DENSE_AND_CONV2D = """\
  - template: dense.x86
    args: {M: 32, N: 32, K: 32}
  - template: conv2d_nchw.x86
    args: {N: 1, H: 8, W: 8, CI: 8, CO: 8, KH: 3, KW: 3, stride: [1, 1], padding: [1, 1]}
  - template: conv2d_nchw_spatial_pack.arm_cpu     # TVM's arguments, as its arm_cpu logs write them
    args: [[TENSOR, [1, 8, 8, 8], float32], [TENSOR, [8, 8, 3, 3], float32], [1, 1], [1, 1, 1, 1], [1, 1],
           float32]"""

#: A user template whose second config reads 1 GiB past its input: it crashes on the board.
CRASHING_TEMPLATE = '''\
from tunecli import autotvm, te


@autotvm.template("arm_test/maybe_crash")
def maybe_crash(n):
    A = te.placeholder((n,), name="A")
    cfg = autotvm.get_config()
    cfg.define_knob("offset", [0, 1 << 28])
    B = te.compute((n,), lambda i: A[i + cfg["offset"].val] * 2.0, name="B")
    return te.create_schedule(B.op), [A, B]
'''


#: A model job for the board: TVM's arm_cpu target, tuned and applied through the tracker.
MODEL_JOB = """\
name: armnet
target: {target}
model: {model}
tuner: {{kind: random, n_trial: {n_trial}, seed: 0}}
measure:
  builder: {{timeout: 60, n_parallel: 2}}
  runner: {runner}
"""
BOARD_RUNNER = ('{{kind: rpc, key: {key}, tracker: "127.0.0.1:{port}", number: 1, repeat: 2, '
                'min_repeat_ms: 0, warmup_ms: 0, timeout: 120}}')


def write_model_job(tmp_path: Path, model: str, runner: str, n_trial: int = 1,
                    target: str = ARM_BOARD) -> str:
    path = tmp_path / "armnet.yaml"
    path.write_text(MODEL_JOB.format(target=target, model=model, n_trial=n_trial, runner=runner))
    return str(path)


def tiny_onnx_model(tmp_path: Path) -> str:
    from tests.engine.job.tiny_network import INPUT, SHAPE, write_tiny_onnx

    onnx = write_tiny_onnx(tmp_path / "tiny.onnx")
    return f"{{onnx: {onnx}, input: {{{INPUT}: [{', '.join(map(str, SHAPE))}]}}}}"


def elf_machine(path: Path) -> int:
    data = path.read_bytes()
    assert data[:4] == b"\x7fELF", path
    return int.from_bytes(data[18:20], "little")


def write_job(tmp_path: Path, port: int, tasks: str = DENSE_AND_CONV2D, n_trial: int = 3,
              tuner: str = "random", key: str = "rk3399", target: str = AARCH64_NEON) -> str:
    path = tmp_path / "arm.yaml"
    path.write_text(ARM_JOB.format(target=target, tasks=tasks, tuner=tuner, n_trial=n_trial, key=key,
                                   port=port))
    return str(path)


def test_tune_best_and_apply_a_job_for_the_board(arm_board, arm_tracker, invoke, tmp_path):
    job, log = write_job(tmp_path, arm_tracker.port, n_trial=2), tmp_path / "arm.log"
    tuned = invoke("tune", job, "--log", str(log), "--quiet")
    assert tuned.exit_code == 0, tuned.output
    records = list(load_from_file(str(log)))
    assert len(records) == 6
    assert {str(inp.target) for inp, _ in records} == {AARCH64_NEON}
    assert {inp.task.name for inp, _ in records} == {"dense.x86", "conv2d_nchw.x86",
                                                     "conv2d_nchw_spatial_pack.arm_cpu"}
    assert all(res.error_no == MeasureErrorNo.NO_ERROR for _, res in records), records

    best = invoke("best", str(log), "--json")
    assert best.exit_code == 0, best.output
    workloads = json.loads(best.stdout)["workloads"]
    assert sorted(w["workload"][0] for w in workloads) == [
        "conv2d_nchw.x86", "conv2d_nchw_spatial_pack.arm_cpu", "dense.x86"]

    applied = invoke("apply", job, "--log", str(log), "--export", str(tmp_path / "kernels"), "--json")
    assert applied.exit_code == 0, applied.output
    report = json.loads(applied.stdout)
    assert report["runs_here"] is False and "rk3399" in report["device"]
    assert [(t["correct"], t["checked_against"]) for t in report["tasks"]] == [(True, "numpy")] * 3
    for task in report["tasks"]:
        obj = Path(next(f for f in task["files"] if f.endswith(".o"))).read_bytes()
        assert int.from_bytes(obj[18:20], "little") == EM_AARCH64


def test_an_x86_job_against_the_board_stops_with_one_clear_error(arm_board, arm_tracker, invoke, tmp_path):
    job, log = write_job(tmp_path, arm_tracker.port, target="llvm"), tmp_path / "x86.log"
    result = invoke("tune", job, "--log", str(log), "--quiet")
    assert result.exit_code == 1
    assert "compiles for x86_64" in result.output and "is aarch64" in result.output, result.output
    assert not log.exists() or not list(load_from_file(str(log)))


def test_a_config_that_crashes_on_the_board_is_an_error_record(arm_board, arm_tracker, invoke, tmp_path):
    (tmp_path / "crash_tpl.py").write_text(CRASHING_TEMPLATE)
    tasks = f"  - template: {tmp_path / 'crash_tpl.py'}:maybe_crash\n    args: [64]"
    job = write_job(tmp_path, arm_tracker.port, tasks=tasks, n_trial=2, tuner="gridsearch")
    log = tmp_path / "crash.log"
    result = invoke("tune", job, "--log", str(log), "--quiet")
    assert result.exit_code == 0, result.output
    errors = [res.error_no for _, res in load_from_file(str(log))]
    assert errors == [MeasureErrorNo.NO_ERROR, MeasureErrorNo.RUNTIME_DEVICE]


@pytest.mark.slow
def test_killing_the_board_mid_tune_loses_no_config(arm_tracker, invoke, tmp_path):
    key = "rk3399-kill"
    board = start_arm_server(arm_tracker, key)
    tasks = "  - template: dense.x86\n    args: {M: 32, N: 32, K: 32}"
    job = write_job(tmp_path, arm_tracker.port, tasks=tasks, n_trial=8, key=key)
    log = tmp_path / "kill.log"

    def kill_after_two_records() -> None:
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            if log.exists() and len(log.read_text().splitlines()) >= 2:
                board.kill()
                return
            time.sleep(0.05)

    killer = threading.Thread(target=kill_after_two_records, daemon=True)
    killer.start()
    try:
        first = invoke("tune", job, "--log", str(log), "--quiet")
        killer.join(10)
    finally:
        board.stop()
    assert first.exit_code == 1 and "not measured" in first.output, first.output
    done = list(load_from_file(str(log)))
    assert 2 <= len(done) < 8 and all(res.error_no == MeasureErrorNo.NO_ERROR for _, res in done), done

    board = start_arm_server(arm_tracker, key)
    try:
        second = invoke("tune", job, "--log", str(log), "--quiet")
    finally:
        board.stop()
    assert second.exit_code == 0, second.output
    records = list(load_from_file(str(log)))
    assert len(records) == 8 and all(res.error_no == MeasureErrorNo.NO_ERROR for _, res in records)
    assert len({inp.config.index for inp, _ in records}) == 8


def _apply_model_job_on_the_board(invoke, tmp_path: Path, job: str, log: Path) -> dict:
    tuned = invoke("tune", job, "--log", str(log), "--quiet")
    assert tuned.exit_code == 0, tuned.output
    export = tmp_path / "out" / "armnet.so"
    applied = invoke("apply", job, "--log", str(log), "--export", str(export), "--json")
    assert applied.exit_code == 0, applied.output
    report = json.loads(applied.stdout)
    assert "rk3399" in report["device"] and "aarch64" in report["device"]
    assert report["export"] == str(export) and elf_machine(export) == EM_AARCH64
    assert report["correct"] is True and report["error"] is None
    [latency] = report["latencies"]  # one, timed by the device's clock with its own threads
    assert latency["threads"] == 0 and latency["tuned"] > 0 and latency["untuned"] > 0
    return report


@pytest.mark.slow
def test_apply_runs_a_model_job_on_the_board_and_checks_it_against_onnxruntime(arm_board, arm_tracker, invoke,
                                                                                tmp_path):
    pytest.importorskip("onnxruntime")
    runner = BOARD_RUNNER.format(key=arm_board.key, port=arm_tracker.port)
    job = write_model_job(tmp_path, tiny_onnx_model(tmp_path), runner)
    report = _apply_model_job_on_the_board(invoke, tmp_path, job, tmp_path / "armnet.log")
    assert report["checked_against"] == "onnxruntime" and report["summary"].startswith("3 of 3 tasks tuned")

    shown = invoke("apply", job, "--log", str(tmp_path / "armnet.log"))
    assert shown.exit_code == 0, shown.output
    assert "device's" in shown.stdout and "ran on" in shown.stdout and "rk3399" in shown.stdout


@pytest.mark.slow
def test_apply_runs_resnet18_on_the_board_and_checks_it_against_the_interpreter(arm_board, arm_tracker,
                                                                              invoke, tmp_path):
    runner = BOARD_RUNNER.format(key=arm_board.key, port=arm_tracker.port)
    job = write_model_job(tmp_path, "{name: resnet-18, image_shape: [3, 32, 32]}", runner)
    report = _apply_model_job_on_the_board(invoke, tmp_path, job, tmp_path / "r18.log")
    assert report["checked_against"] == "interpreter"
