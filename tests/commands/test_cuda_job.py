"""A job for the ``cuda`` target on a machine without a GPU: it can be inspected, a local tune stops
before any trial with one clear error (exit 2), and a tune through a device server without a GPU
stops with one clear error too.  (With a GPU, ``scripts/gpu_check.py`` runs the real thing.)"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tunecli.engine.rpc.client import connect_tracker
from tunecli.engine.runtime import cuda

from .conftest import Invoke
from .test_rpc import free_port, start

ROOT = Path(__file__).resolve().parents[2]
SEED_JOB = ROOT / "jobs" / "seed_conv2d_cuda.yaml"
no_gpu = pytest.mark.skipif(cuda(0).exist, reason="this machine has a CUDA GPU")

SMALL_JOB = """\
name: small_cuda
target: cuda -arch=sm_90
tasks:
  - template: conv2d_nchw.cuda
    args: {{data: [TENSOR, [1, 8, 7, 7], float32], kernel: [TENSOR, [16, 8, 3, 3], float32],
           strides: [1, 1], padding: [1, 1, 1, 1], dilation: [1, 1], out_dtype: float32}}
tuner: {{kind: random, n_trial: 4, seed: 0}}
measure:
  runner: {runner}
"""


def test_the_seed_cuda_job_is_inspected_anywhere(invoke: Invoke) -> None:
    result = invoke("inspect", str(SEED_JOB))
    assert result.exit_code == 0, result.output
    assert "tutorial/conv2d_no_batching(1, 7, 7, 512, 512, 3, 3, (1,1), (1,1))" in result.stdout
    assert "ConfigSpace (len=10454400," in result.stdout  # the tutorial's space, as in the seed notes
    assert "conv2d_nchw.cuda(float32[1,512,7,7]" in result.stdout and "(len=844800," in result.stdout


@no_gpu
def test_a_local_tune_without_a_gpu_stops_before_any_trial(invoke: Invoke, tmp_path: Path) -> None:
    job = tmp_path / "job.yaml"
    job.write_text(SMALL_JOB.format(runner="{kind: local, timeout: 5}"))
    log = tmp_path / "small.log"
    result = invoke("tune", str(job), "--log", str(log))
    assert result.exit_code == 2, result.output
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith(f"error: {job}: target 'cuda -arch=sm_90': no CUDA "
                                                   "driver/GPU on this machine"), result.stderr
    assert not log.exists()


@pytest.fixture()
def gpu_less_server() -> Iterator[tuple[int, str]]:
    """A tracker and a device server (this machine, no GPU) under key "nogpu"."""
    port, server_port = free_port(), free_port()
    procs: list[subprocess.Popen] = []
    try:
        tracker, _ = start("tracker", "--port", str(port), "--port-end", str(port + 1))
        procs.append(tracker)
        server, line = start("server", "--tracker", f"127.0.0.1:{port}", "--key", "nogpu",
                             "--port", str(server_port), "--port-end", str(server_port + 1))
        procs.append(server)
        assert line == f"server 'nogpu' listening on 127.0.0.1:{server_port}"
        assert server.stdout is not None
        served = server.stdout.readline().strip()
        assert served.startswith("serving device 'nogpu' (") and "CUDA GPU" not in served
        deadline = time.monotonic() + 20
        with connect_tracker("127.0.0.1", port) as tracker_session:
            while tracker_session.summary()["queue_info"].get("nogpu", {}).get("free", 0) < 1:
                assert time.monotonic() < deadline, "the server did not register with the tracker in 20 s"
                time.sleep(0.1)
        yield port, served
    finally:
        for proc in reversed(procs):
            proc.terminate()
            proc.communicate(timeout=10)


@no_gpu
def test_a_tune_through_a_server_without_a_gpu_stops_with_one_error(invoke: Invoke, tmp_path: Path,
                                                                    gpu_less_server: tuple[int, str]) -> None:
    port, _ = gpu_less_server
    job = tmp_path / "job.yaml"
    runner = f"{{kind: rpc, key: nogpu, tracker: '127.0.0.1:{port}', timeout: 5}}"
    job.write_text(SMALL_JOB.format(runner=runner))
    result = invoke("tune", str(job), "--log", str(tmp_path / "small.log"), "--quiet")
    assert result.exit_code == 1, result.output
    assert "the job's target 'cuda -arch=sm_90' runs on an NVIDIA GPU, but device 'nogpu'" in result.output
    assert "has no CUDA driver/GPU" in result.output


@no_gpu
def test_apply_of_a_cuda_network_through_a_server_without_a_gpu_is_one_error(
        invoke: Invoke, tmp_path: Path, gpu_less_server: tuple[int, str]) -> None:
    """The network builds for ``cuda``; the device of the job's key cannot run it: one error naming
    the device, nothing shipped."""
    pytest.importorskip("onnx")
    from tests.engine.job.tiny_network import INPUT, SHAPE, write_tiny_onnx

    port, _ = gpu_less_server
    onnx = write_tiny_onnx(tmp_path / "tiny.onnx")
    job = tmp_path / "net.yaml"
    job.write_text(f"name: net\ntarget: cuda -arch=sm_90\n"
                   f"model: {{onnx: {onnx}, input: {{{INPUT}: [{', '.join(map(str, SHAPE))}]}}}}\n"
                   f"tuner: {{kind: random, n_trial: 1}}\nmeasure:\n"
                   f"  runner: {{kind: rpc, key: nogpu, tracker: '127.0.0.1:{port}', timeout: 5}}\n")
    log = tmp_path / "net.log"
    log.write_text("")
    result = invoke("apply", str(job), "--log", str(log))
    assert result.exit_code == 1, result.output
    assert ("apply: the job's target 'cuda -arch=sm_90' runs on an NVIDIA GPU, but device 'nogpu'"
            in result.output and "Traceback" not in result.output), result.output
