"""Cross-compilation: the builder compiles for the job's target and the object file is what travels.

A tuner on x86 can build for an AArch64 board; a device server that receives an object it cannot
load reports an error result and keeps serving.
"""

from __future__ import annotations

from tests.engine.kernels_ir import ARG_SPECS, EM_AARCH64, EM_X86_64, VADD, compile_ir, elf_machine
from tunecli.engine.measure.builder import BuildResult
from tunecli.engine.measure.result import MeasureErrorNo, MeasureInput
from tunecli.engine.ops import registry  # noqa: F401  (registers the built-in templates)
from tunecli.engine.rpc.rpc_runner import RPCRunner
from tunecli.engine.task.task import create

from .conftest import build_configs, free_servers, wait_for

AARCH64 = "llvm -mtriple=aarch64-linux-gnu"


def test_builder_compiles_for_the_tasks_cross_target():
    task = create("tutorial/matmul", args=(32, 32, 32, "float32"), target=AARCH64)
    results = build_configs(task, (0, 5))
    assert all(isinstance(r, BuildResult) for r in results), results
    assert {elf_machine(r.obj) for r in results} == {EM_AARCH64}


def test_server_reports_an_object_for_another_machine_as_an_error_and_keeps_serving(procs, tracker):
    procs("x86", tracker_port=tracker.port)
    wait_for(lambda: free_servers(tracker, "x86") == 1, what="server registered")
    task = create("tutorial/matmul", args=(32, 32, 32, "float32"), target=AARCH64)
    (foreign,) = build_configs(task, (0,))
    native = BuildResult(compile_ir(VADD), "vadd", ARG_SPECS, 0.01, (2,))
    assert elf_machine(native.obj) == EM_X86_64
    runner = RPCRunner("x86", "127.0.0.1", tracker.port, timeout=10, cooldown_interval=0)
    results = runner.run([MeasureInput(AARCH64, task, 0), MeasureInput("llvm", None, 1)], [foreign, native])
    assert results[0].error_no == MeasureErrorNo.RUNTIME_DEVICE
    assert "the object file is for AArch64" in str(results[0].costs), results[0]
    assert results[1].error_no == MeasureErrorNo.NO_ERROR
