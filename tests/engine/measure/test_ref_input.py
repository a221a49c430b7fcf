"""TVM's ``ref_input``: fixed argument contents instead of seeded random ones, carried from the
runner through its executor and the request to the worker that times the kernel."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from tests.engine.kernels_ir import ARG_SPECS, VADD, VSUB, N, compile_ir
from tests.engine.measure import measure_templates  # noqa: F401  (registers the templates)
from tunecli.engine.codegen import ArgSpec
from tunecli.engine.measure import BuildResult, LocalRunner
from tunecli.engine.measure.executor import InlineExecutor
from tunecli.engine.measure.result import MeasureErrorNo, MeasureInput, MeasureResult
from tunecli.engine.measure.timing import MeasureRequest, measure_object
from tunecli.engine.task.task import create

SPECS = tuple(ArgSpec(name, shape, dtype) for name, (shape, dtype) in zip("abc", ARG_SPECS, strict=True))


def given_inputs() -> list[np.ndarray]:
    """float64 arrays (converted to the kernel's float32) with values no seeded input has."""
    return [np.arange(N, dtype=np.float64), np.full(N, 100.0), np.zeros(N)]


def test_the_worker_computes_on_the_given_arrays():
    inputs = given_inputs()
    reply = measure_object(MeasureRequest(compile_ir(VADD), "vadd", ARG_SPECS, inputs=tuple(inputs),
                                          return_outputs=True))
    assert reply.error_no == MeasureErrorNo.NO_ERROR
    (index, raw), = reply.outputs
    assert index == 2
    np.testing.assert_array_equal(np.frombuffer(raw, np.float32), (inputs[0] + inputs[1]).astype(np.float32))


@pytest.mark.parametrize(("inputs", "message"), [
    (given_inputs()[:2], "ref_input has 2 arrays, the kernel takes 3 arguments"),
    ([np.zeros(N), np.zeros(N + 1), np.zeros(N)], "ref_input array 1 has shape"),
])
def test_arrays_that_do_not_fit_the_kernel_are_a_runtime_error(inputs, message):
    reply = measure_object(MeasureRequest(compile_ir(VADD), "vadd", ARG_SPECS, inputs=tuple(inputs)))
    assert reply.error_no == MeasureErrorNo.RUNTIME_DEVICE and message in reply.error


@pytest.fixture(scope="module")
def task():
    t = create("measure_test/faulty", (N,), "llvm")
    t.reference = lambda a, b: a + b
    return t


@pytest.fixture()
def runner(task):
    r = LocalRunner(timeout=5, number=1, repeat=1, cooldown_interval=0, check_correctness=True)
    r.set_task(task)
    yield r
    r.close()


def built(ir: str, entry: str) -> BuildResult:
    return BuildResult(compile_ir(ir), entry, SPECS, 0.1, (2,))


def test_setting_ref_input_warns_as_in_tvm(runner):
    assert runner.ref_input is None
    with pytest.warns(RuntimeWarning, match="ref_input"):
        runner.ref_input = given_inputs()
    assert runner.ref_input is not None and len(runner.ref_input) == 3


def test_the_runner_measures_on_ref_input_and_skips_the_seeded_check(task, runner):
    inp = MeasureInput(task.target, task, task.config_space.get(0))
    assert runner.run_one(inp, built(VSUB, "vsub")).error_no == MeasureErrorNo.WRONG_ANSWER
    with pytest.warns(RuntimeWarning):
        runner.ref_input = given_inputs()
    # outputs on fixed inputs have no reference: even a wrong kernel is timed
    result = runner.run_one(inp, built(VSUB, "vsub"))
    assert result.error_no == MeasureErrorNo.NO_ERROR and len(result.costs) == 1
    with pytest.warns(RuntimeWarning):
        runner.ref_input = given_inputs()[:1]
    bad = runner.run_one(inp, built(VADD, "vadd"))
    assert bad.error_no == MeasureErrorNo.RUNTIME_DEVICE and "ref_input has 1 arrays" in bad.costs[0]


def test_each_measurement_goes_through_the_runners_executor(task, runner):
    inp = MeasureInput(task.target, task, task.config_space.get(0))
    failed = MeasureResult(("no",), MeasureErrorNo.COMPILE_HOST, 0.1, 1.0)
    assert isinstance(runner.executor, InlineExecutor)
    threads = []
    original = runner.measure

    def measure(*args, **kwargs):
        threads.append(threading.current_thread().name)
        return original(*args, **kwargs)

    runner.measure = measure
    with ThreadPoolExecutor(1, thread_name_prefix="user-executor") as pool:
        runner.executor = pool
        results = runner.run([inp, inp], [built(VADD, "vadd"), failed])
    assert results[0].error_no == MeasureErrorNo.NO_ERROR and results[1] is failed
    assert len(threads) == 2 and all(name.startswith("user-executor") for name in threads)


def test_the_inline_executor_runs_at_once_and_keeps_exceptions():
    executor = InlineExecutor()
    assert executor.submit(pow, 2, 5).result() == 32
    failed = executor.submit(int, "x")
    assert failed.done() and isinstance(failed.exception(), ValueError)
