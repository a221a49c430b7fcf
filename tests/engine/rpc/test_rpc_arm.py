"""A real AArch64 device server (emulated by qemu-user) measuring objects cross-compiled here.

The server is ``tunecli server`` run by an arm64 Python with the aarch64 wheels of tunecli's
dependencies (``scripts/arm64-device.sh``); kernels built for
``llvm -mtriple=aarch64-linux-gnu -mattr=+neon`` are linked by its JIT and run on the emulated
processor. Timings under emulation mean nothing; loading, calling, checking and the protocol are
real. Skipped where qemu or the arm64 packages cannot be had.
"""

from __future__ import annotations

import types

import numpy as np
import pytest

from tests.arm_board import AARCH64_NEON, tiny_network
from tests.engine.kernels_ir import ARG_SPECS, CRASH, EM_AARCH64, HANG, VADD, compile_ir, elf_machine
from tests.engine.runtime.test_module_export import N, add_one
from tunecli import nd
from tunecli.engine.build import build
from tunecli.engine.graph.build_module import build as relay_build
from tunecli.engine.measure.builder import BuildResult
from tunecli.engine.measure.result import MeasureErrorNo, MeasureInput
from tunecli.engine.ops import registry  # noqa: F401  (registers the built-in templates)
from tunecli.engine.rpc.client import connect_tracker
from tunecli.engine.rpc.rpc_runner import RPCRunner
from tunecli.engine.target import Target
from tunecli.engine.task.task import create
from tunecli.errors import RPCError, TargetError

from .conftest import build_configs

pytestmark = pytest.mark.timeout(900)
TRIPLE = "aarch64-linux-gnu"


def runner_for(board, tracker, **kwargs) -> RPCRunner:
    """An RPCRunner for the emulated board, with timings that suit emulation."""
    options = dict(timeout=60, number=1, repeat=1, min_repeat_ms=0, warmup_ms=0, cooldown_interval=0)
    return RPCRunner(board.key, "127.0.0.1", tracker.port, **{**options, **kwargs})


def test_the_board_describes_an_aarch64_processor(arm_board, arm_tracker):
    with connect_tracker("127.0.0.1", arm_tracker.port) as tracker:
        session = tracker.request(arm_board.key, wait_timeout=120)
    with session:
        info = session.describe()
    assert info.key == "rk3399" and info.arch == "aarch64", info
    assert info.triple.startswith("aarch64-")
    assert info.mismatch(Target(AARCH64_NEON)) == ""
    assert "x86_64" in info.mismatch(Target("llvm -mtriple=x86_64-linux-gnu"))


def test_neon_kernels_of_a_builtin_template_run_and_are_checked_on_the_board(arm_board, arm_tracker):
    task = create("dense.x86", args=(32, 32, 32, "float32"), target=AARCH64_NEON)
    indices = (0, 7, len(task.config_space) - 1)
    builds = build_configs(task, indices, timeout=120)
    assert all(isinstance(b, BuildResult) and elf_machine(b.obj) == EM_AARCH64 for b in builds), builds
    with task.target:
        sch, args = task.instantiate(task.config_space.get(indices[-1]))
    assert ".4s" in build(sch, args, target=task.target).get_source("asm")  # NEON vector code
    inputs = [MeasureInput(task.target, task, task.config_space.get(i)) for i in indices]

    runner = runner_for(arm_board, arm_tracker, check_correctness=True)
    runner.set_task(task)
    results = runner.run(inputs, builds)
    assert [r.error_no for r in results] == [MeasureErrorNo.NO_ERROR] * 3, results
    assert all(r.mean_cost > 0 for r in results)
    assert set(runner.last_devices) == {f"127.0.0.1:{arm_board.port}"}

    wrong = types.SimpleNamespace(name="dense+1", args=task.args, target=task.target,
                                  reference=lambda data, weight: data @ weight.T + 1)
    runner.set_task(wrong)
    (result,) = runner.run([MeasureInput(task.target, wrong, task.config_space.get(0))], builds[:1])
    assert result.error_no == MeasureErrorNo.WRONG_ANSWER, result


def test_a_job_target_for_another_machine_is_one_clear_error_before_any_measurement(arm_board, arm_tracker):
    task = create("dense.x86", args=(16, 16, 16, "float32"), target="llvm")
    builds = build_configs(task, (0,), timeout=120)
    runner = runner_for(arm_board, arm_tracker)
    runner.set_task(task)
    reported = []
    with pytest.raises(TargetError) as err:
        runner.run([MeasureInput(task.target, task, task.config_space.get(0))], builds,
                   on_result=lambda i, r: reported.append(i))
    assert "x86_64" in str(err.value) and "aarch64" in str(err.value) and "rk3399" in str(err.value)
    assert reported == []


@pytest.mark.slow
def test_crash_and_hang_on_the_board_become_error_results_and_the_server_recovers(arm_board, arm_tracker):
    objs = {name: compile_ir(ir, TRIPLE) for name, ir in (("vadd", VADD), ("crash", CRASH), ("hang", HANG))}
    order = ("vadd", "crash", "hang", "vadd")
    builds = [BuildResult(objs[name], name, ARG_SPECS, 0.0, (2,)) for name in order]
    runner = runner_for(arm_board, arm_tracker, timeout=5)
    results = runner.run([MeasureInput(AARCH64_NEON, None, i) for i in range(4)], builds)
    assert [int(r.error_no) for r in results] == [0, int(MeasureErrorNo.RUNTIME_DEVICE),
                                                  int(MeasureErrorNo.RUN_TIMEOUT), 0], results
    assert "SIGSEGV" in results[1].error_message
    assert "killed the kernel" in results[2].error_message and "timeout of 5 s" in results[2].error_message
    assert np.isfinite(results[3].mean_cost)


@pytest.mark.parametrize("name", ["conv2d_nchw_spatial_pack.arm_cpu", "depthwise_conv2d_nchw.arm_cpu"])
def test_tvm_arm_templates_run_and_are_checked_on_the_board(arm_board, arm_tracker, name):
    kernel = (8, 4, 3, 3) if name.startswith("conv2d") else (4, 2, 3, 3)
    args = (("TENSOR", (1, 4, 8, 8), "float32"), ("TENSOR", kernel, "float32"), (1, 1), (1, 1, 1, 1), (1, 1),
            "float32")
    task = create(name, args=args, target=AARCH64_NEON)
    indices = (0, len(task.config_space) // 3)
    builds = build_configs(task, indices, timeout=120)
    runner = runner_for(arm_board, arm_tracker, check_correctness=True)
    runner.set_task(task)
    results = runner.run([MeasureInput(task.target, task, task.config_space.get(i)) for i in indices], builds)
    assert [r.error_no for r in results] == [MeasureErrorNo.NO_ERROR] * 2, results


@pytest.mark.parametrize("name", ["lib.tar", "net.tar"])
def test_a_library_built_for_this_host_is_refused_by_the_board_at_load_and_the_session_goes_on(
        arm_board, arm_tracker, tmp_path, name):
    """A plain ``llvm`` build names no processor (it means "this machine"): the board reads its
    objects' machine when it loads the archive, not when a kernel is first called."""
    mod, params = tiny_network()
    lib = add_one() if name == "lib.tar" else relay_build(mod, target="llvm", params=params)
    lib.export_library(tmp_path / name)
    with connect_tracker("127.0.0.1", arm_tracker.port) as tracker:
        session = tracker.request(arm_board.key, wait_timeout=120)
    with session:
        session.upload(str(tmp_path / name))
        with pytest.raises(RPCError, match="load_module: module .*: the object file is for x86_64, but this "
                                           "machine is aarch64"):
            session.load_module(name)
        add_one(AARCH64_NEON).export_library(tmp_path / "arm.tar")
        session.upload(str(tmp_path / "arm.tar"))
        func, dev = session.load_module("arm.tar"), session.cpu()
        a, b = nd.array(np.ones(N, "float32"), dev), nd.empty((N,), "float32", dev)
        func(a, b)
        np.testing.assert_array_equal(b.numpy(), np.full(N, 2, "float32"))
