"""LocalBuilder: real templates built in worker processes; each way a build fails is data."""

from __future__ import annotations

import numpy as np
import pytest

from tests.engine.measure.measure_templates import MODES
from tunecli.engine.measure import BuildResult, LocalBuilder
from tunecli.engine.measure.result import MeasureErrorNo, MeasureInput, MeasureResult
from tunecli.engine.runtime import load_module
from tunecli.engine.task.task import create
from tunecli.errors import TuneError


@pytest.fixture(scope="module")
def matmul_task():
    return create("measure_test/matmul", (16,), "llvm")


@pytest.fixture(scope="module")
def faulty_task():
    return create("measure_test/faulty", (64,), "llvm")


def inputs(task, indices):
    return [MeasureInput(task.target, task, task.config_space.get(i)) for i in indices]


def test_builds_real_kernels_that_compute_the_right_thing(matmul_task):
    builder = LocalBuilder(n_parallel=2)
    builder.set_task(matmul_task)
    try:
        results = builder.build(inputs(matmul_task, [0, 7, 13]))
    finally:
        builder.close()
    assert all(isinstance(r, BuildResult) for r in results)
    rng = np.random.default_rng(0)
    a, b = rng.random((16, 16), dtype=np.float32), rng.random((16, 16), dtype=np.float32)
    for r in results:
        assert r.time_cost > 0 and r.obj and r.output_indices == (2,)
        assert [s.shape for s in r.arg_specs] == [(16, 16)] * 3
        c = np.zeros((16, 16), dtype=np.float32)
        load_module(r.obj, r.entry_name, r.arg_specs)(a, b, c)  # runs in this process
        np.testing.assert_allclose(c, a @ b, rtol=1e-5)


def test_every_failure_is_a_result_and_the_batch_completes(faulty_task):
    builder = LocalBuilder(timeout=3, n_parallel=2)
    builder.set_task(faulty_task)
    modes = ["ok", "raise", "invalid", "sleep", "die", "noarg", "wrong", "exit"]
    try:
        results = builder.build(inputs(faulty_task, [MODES.index(m) for m in modes]))
        by_mode = dict(zip(modes, results, strict=True))
        assert isinstance(by_mode["ok"], BuildResult)
        assert isinstance(by_mode["wrong"], BuildResult)  # only a runner can tell
        E = MeasureErrorNo
        expected = {"raise": E.INSTANTIATION_ERROR, "invalid": E.INSTANTIATION_ERROR,
                    "sleep": E.BUILD_TIMEOUT, "die": E.COMPILE_HOST, "noarg": E.COMPILE_HOST,
                    "exit": E.COMPILE_HOST}
        for mode, error_no in expected.items():
            res = by_mode[mode]
            assert isinstance(res, MeasureResult), mode
            assert res.error_no == error_no, (mode, res)
            message, exc = res.costs
            assert isinstance(message, str) and isinstance(exc, BaseException)
        assert "this config raises" in by_mode["raise"].costs[0]
        assert isinstance(by_mode["raise"].costs[1], ValueError)
        assert "invalid" in by_mode["invalid"].costs[0]
        assert isinstance(by_mode["noarg"].costs[1], TuneError)  # the compiler's own error, kept
        assert by_mode["sleep"].all_cost == 3
        assert by_mode["die"].costs[0].startswith("the build process died: ")  # a build error, not a device's
        assert sum(w.restarts for w in builder.pool.workers) == 3  # killed sleeper, died and exited ones
        again = builder.build(inputs(faulty_task, [0]))  # the replaced workers build fine
        assert isinstance(again[0], BuildResult)
    finally:
        builder.close()


def test_workers_are_recycled(matmul_task):
    builder = LocalBuilder(n_parallel=1, worker_max_jobs=3)
    builder.set_task(matmul_task)
    try:
        pids = []
        for i in range(7):
            assert isinstance(builder.build(inputs(matmul_task, [i]))[0], BuildResult)
            pids.append(builder.pool.workers[0].pid)
    finally:
        builder.close()
    # a fresh child is started right after the 3rd and 6th build
    assert pids[0] == pids[1] != pids[2] == pids[3] == pids[4] != pids[5] == pids[6]
    assert builder.pool.workers[0].restarts == 2


def test_build_func_validation():
    with pytest.raises(ValueError, match="Invalid build_func 'ndk2': 'default', 'ndk' or a callable"):
        LocalBuilder(build_func="ndk2")
    assert LocalBuilder(n_parallel=None).n_parallel >= 1


def test_ndk_build_func_builds_the_object_a_device_server_loads(matmul_task):
    """TVM's Android scripts ask for build_func='ndk'; the object shipped is the default build's."""
    built = {}
    for name in ("default", "ndk"):
        builder = LocalBuilder(n_parallel=1, build_func=name)
        builder.set_task(matmul_task)
        try:
            [built[name]] = builder.build(inputs(matmul_task, [3]))
        finally:
            builder.close()
    assert isinstance(built["ndk"], BuildResult)
    assert built["ndk"].obj == built["default"].obj
