"""Device servers and CUDA: a server describes its GPU (compute capability) or the lack of one; a
GPU job is refused by a server without a GPU before anything is measured, and a CUDA measurement
that reaches such a server anyway is an error record while the server keeps serving."""

from __future__ import annotations

import pytest

from tests.engine.kernels_ir import ARG_SPECS, VADD, compile_ir
from tunecli.engine.measure.builder import BuildResult
from tunecli.engine.measure.result import MeasureErrorNo, MeasureInput
from tunecli.engine.ops import registry  # noqa: F401  (registers the built-in templates)
from tunecli.engine.rpc.device_info import DeviceInfo, this_device
from tunecli.engine.rpc.rpc_runner import RPCRunner
from tunecli.engine.runtime import cuda
from tunecli.engine.task.task import create
from tunecli.errors import RPCError, TargetError

from .conftest import build_configs, free_servers, wait_for

H200 = DeviceInfo("h200", "x86_64-unknown-linux-gnu", "sapphirerapids", ("+avx2",), "9.0")
CPU_ONLY = DeviceInfo("cpu", "x86_64-unknown-linux-gnu", "znver3", ("+avx2",))
CONV_ARGS = (("TENSOR", (1, 8, 7, 7), "float32"), ("TENSOR", (16, 8, 3, 3), "float32"), (1, 1), (1, 1, 1, 1),
             (1, 1), "float32")
no_gpu = pytest.mark.skipif(cuda(0).exist, reason="this machine has a CUDA GPU")


def test_a_server_describes_its_gpu_and_old_peers_still_decode():
    assert DeviceInfo.from_dict(H200.as_dict()) == H200
    assert "gpu" not in CPU_ONLY.as_dict() and DeviceInfo.from_dict(CPU_ONLY.as_dict()) == CPU_ONLY
    assert H200.describe() == "device 'h200' (x86_64-unknown-linux-gnu, cpu sapphirerapids, CUDA GPU sm_90)"
    with pytest.raises(RPCError, match="malformed device description"):
        DeviceInfo.from_dict({**H200.as_dict(), "gpu": "sm_90"})
    assert this_device("here").gpu == (cuda(0).compute_version if cuda(0).exist else "")


def test_gpu_targets_run_on_a_gpu_of_their_architecture_or_newer():
    assert H200.mismatch("cuda") == H200.mismatch("cuda -arch=sm_90") == ""
    assert H200.mismatch("llvm") == ""  # the server's CPU still runs CPU kernels
    assert "compiles for sm_100, newer than the GPU of device 'h200'" in H200.mismatch("cuda -arch=sm_100")
    assert "set the job's target to 'cuda -arch=sm_90'" in H200.mismatch("cuda -arch=sm_100")
    assert "runs on an NVIDIA GPU, but device 'cpu'" in CPU_ONLY.mismatch("cuda")
    assert "has no CUDA driver/GPU" in CPU_ONLY.mismatch("cuda -arch=sm_80")


def _ptx_build(task):
    (result,) = build_configs(task, (0,))
    assert isinstance(result, BuildResult) and result.launch is not None and b".entry" in result.obj
    return result


@no_gpu
def test_a_gpu_task_is_refused_by_a_server_without_a_gpu(procs, tracker):
    procs("nogpu", tracker_port=tracker.port)
    wait_for(lambda: free_servers(tracker, "nogpu") == 1, what="server registered")
    task = create("conv2d_nchw.cuda", args=CONV_ARGS, target="cuda")
    runner = RPCRunner("nogpu", "127.0.0.1", tracker.port, timeout=10, cooldown_interval=0)
    runner.set_task(task)
    with pytest.raises(TargetError, match="on an NVIDIA GPU, but device 'nogpu'.* has no CUDA driver/GPU"):
        runner.run([MeasureInput(task.target, task, task.config_space.get(0))], [_ptx_build(task)])


@no_gpu
def test_a_cuda_measurement_on_a_server_without_a_gpu_is_an_error_record(procs, tracker):
    procs("nogpu", tracker_port=tracker.port)
    wait_for(lambda: free_servers(tracker, "nogpu") == 1, what="server registered")
    task = create("conv2d_nchw.cuda", args=CONV_ARGS, target="cuda")
    ptx = _ptx_build(task)
    native = BuildResult(compile_ir(VADD), "vadd", ARG_SPECS, 0.01, (2,))
    runner = RPCRunner("nogpu", "127.0.0.1", tracker.port, timeout=10, cooldown_interval=0)
    results = runner.run([MeasureInput("cuda", None, 0), MeasureInput("llvm", None, 1)], [ptx, native])
    assert results[0].error_no == MeasureErrorNo.RUNTIME_DEVICE, results[0]
    assert "CUDA" in results[0].error_message and "driver" in results[0].error_message
    assert results[1].error_no == MeasureErrorNo.NO_ERROR  # the server kept serving
