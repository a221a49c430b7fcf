"""TVM's ``tune_relay_arm.py`` walked through tunecli's TVM-style API against the emulated board
(``scripts/arm64-device.sh``): extract the tasks, tune them on the board, build the network for the
board, export it with a cross compiler (or as a ``.tar`` the board loads itself), then
``request_remote``, ``upload``, ``load_module``, run and time it there; the board's outputs equal
the host build's.  Timings under emulation mean nothing; they are only checked to exist."""

from __future__ import annotations

import shutil

import numpy as np
import pytest

import tunecli
from tests.arm_board import ARM_BOARD, tiny_network
from tunecli import autotvm, relay
from tunecli.autotvm.tuner import RandomTuner
from tunecli.contrib import cc, utils
from tunecli.contrib import graph_executor as runtime
from tunecli.relay import testing

pytestmark = pytest.mark.timeout(1800)
CROSS_GCC = "aarch64-linux-gnu-gcc"


def _host_output(mod, params, x: np.ndarray) -> np.ndarray:
    with tunecli.transform.PassContext(opt_level=3):
        lib = relay.build(mod, target="llvm", params=params)
    module = runtime.GraphModule(lib["default"](tunecli.cpu(0)))
    module.set_input("data", x)
    module.run()
    return module.get_output(0).numpy()


def _run_on_board(board, tracker, lib, filename: str, x: np.ndarray, fcompile=None):
    """Export ``lib``, ship it to the board, run it once and time it: (output, timing results)."""
    tmp = utils.tempdir()
    if fcompile is None:
        lib.export_library(tmp.relpath(filename))
    else:
        lib.export_library(tmp.relpath(filename), fcompile)
    remote = autotvm.measure.request_remote(board.key, "127.0.0.1", tracker.port, timeout=1200)
    try:
        remote.upload(tmp.relpath(filename))
        rlib = remote.load_module(filename)
        dev = remote.device(str(lib.target), 0)
        module = runtime.GraphModule(rlib["default"](dev))
        module.set_input("data", tunecli.nd.array(x))
        module.run()
        out = module.get_output(0).numpy()
        ftimer = module.module.time_evaluator("run", dev, number=1, repeat=2)
        return out, ftimer().results
    finally:
        remote.close()


def test_tune_relay_arm_steps_on_the_emulated_board(arm_board, arm_tracker, tmp_path):
    target = tunecli.target.Target(ARM_BOARD)
    mod, params = tiny_network()
    tasks = autotvm.task.extract_from_program(
        mod["main"], target=target, params=params, ops=(relay.op.get("nn.conv2d"), relay.op.get("nn.dense")))
    assert [t.name for t in tasks] == ["conv2d_nchw_spatial_pack.arm_cpu", "dense.x86", "dense_pack.x86"]
    log_file = str(tmp_path / "tiny.log")
    measure_option = autotvm.measure_option(
        builder=autotvm.LocalBuilder(build_func="default"),
        runner=autotvm.RPCRunner(arm_board.key, host="127.0.0.1", port=arm_tracker.port, number=1, repeat=1,
                                 timeout=60, min_repeat_ms=0))
    for task in tasks:
        tuner = RandomTuner(task)
        tuner.tune(n_trial=2, measure_option=measure_option,
                   callbacks=[autotvm.callback.log_to_file(log_file)])
    records = list(autotvm.record.load_from_file(log_file))
    assert len(records) == 6 and sum(res.error_no == 0 for _, res in records) >= 3, records

    with autotvm.apply_history_best(log_file):
        with tunecli.transform.PassContext(opt_level=3):
            lib = relay.build_module.build(mod, target=target, params=params)
    assert lib.summary.tuned
    x = np.random.default_rng(2).uniform(size=(1, 3, 16, 16)).astype("float32")
    expected = _host_output(mod, params, x)
    out, timing = _run_on_board(arm_board, arm_tracker, lib, "net.tar", x)  # the tutorial's default path
    np.testing.assert_allclose(out, expected, rtol=1e-4, atol=1e-6)
    assert len(timing) == 2 and all(t > 0 for t in timing)
    if shutil.which(CROSS_GCC):
        out, _ = _run_on_board(arm_board, arm_tracker, lib, "net.so", x, cc.cross_compiler(CROSS_GCC))
        np.testing.assert_allclose(out, expected, rtol=1e-4, atol=1e-6)


@pytest.mark.slow
@pytest.mark.parametrize("network", ["resnet-18", "mobilenet_v2"])
def test_cross_built_networks_match_the_host_build_on_the_board(arm_board, arm_tracker, network):
    if not shutil.which(CROSS_GCC):
        pytest.skip(f"{CROSS_GCC} is not installed (Debian: gcc-aarch64-linux-gnu)")
    if network == "resnet-18":
        mod, params = testing.resnet.get_workload(num_layers=18, batch_size=1)
    else:
        mod, params = testing.mobilenet_v2.get_workload(batch_size=1)
    with tunecli.transform.PassContext(opt_level=3):
        lib = relay.build(mod, target=ARM_BOARD, params=params)
    x = np.random.default_rng(3).uniform(size=(1, 3, 224, 224)).astype("float32")
    out, _ = _run_on_board(arm_board, arm_tracker, lib, "net.so", x, cc.cross_compiler(CROSS_GCC))
    np.testing.assert_allclose(out, _host_output(mod, params, x), rtol=1e-4, atol=1e-5)
