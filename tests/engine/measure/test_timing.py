"""measure_object: loading, correctness check, guard pages and TVM's timing loop, on real objects."""

from __future__ import annotations

import mmap
import time

import numpy as np
import pytest

from tests.engine.kernels_ir import ARG_SPECS, CRASH, OVERRUN, SHORT, VADD, VSUB, compile_ir, vadd_expected
from tunecli.engine.measure.arrays import kernel_arguments, random_arguments
from tunecli.engine.measure.result import MeasureErrorNo
from tunecli.engine.measure.timing import MEASURE_FUNC, MeasureRequest, compare_outputs, measure_object
from tunecli.engine.measure.timing_options import TimingOptions
from tunecli.engine.measure.worker import CallStatus, Worker
from tunecli.engine.ops.tolerance import matches_reference, tolerance
from tunecli.engine.runtime import cpu


def request(ir: str, entry: str, **kw) -> MeasureRequest:
    return MeasureRequest(compile_ir(ir), entry, ARG_SPECS, **kw)


@pytest.fixture(scope="module")
def worker():
    w = Worker(preload=["tunecli.engine.measure.timing"], name="test-timing")
    yield w
    w.close()


def test_times_a_kernel_with_repeat_costs():
    reply = measure_object(request(VADD, "vadd", timing=TimingOptions(number=5, repeat=4)))
    assert reply.error_no == MeasureErrorNo.NO_ERROR and reply.error == ""
    assert len(reply.costs) == 4
    assert all(0 < c < 1e-3 for c in reply.costs)  # seconds per call of a 64-element add


def test_min_repeat_ms_grows_the_rounds():
    start = time.perf_counter()
    reply = measure_object(request(VADD, "vadd", timing=TimingOptions(number=1, repeat=3, min_repeat_ms=20)))
    assert len(reply.costs) == 3 and all(c < 1e-3 for c in reply.costs)
    assert time.perf_counter() - start >= 0.06  # every round lasted at least 20 ms


def test_timing_starts_after_warmup_ms_of_untimed_calls():
    quick = measure_object(request(VADD, "vadd", timing=TimingOptions(number=1, repeat=1, warmup_ms=0)))
    warmed = measure_object(request(VADD, "vadd", timing=TimingOptions(number=1, repeat=1, warmup_ms=200)))
    assert quick.run_time < 0.2 <= warmed.run_time  # loading and one call take ~1 ms, 20 ms on a busy machine
    assert len(warmed.costs) == 1 and warmed.costs[0] < 1e-3  # the warm-up is not in the cost


def test_correct_answer_passes_and_outputs_come_back():
    reply = measure_object(request(VADD, "vadd", ref_outputs=((2, vadd_expected(7)),), seed=7,
                                   return_outputs=True))
    assert reply.error_no == MeasureErrorNo.NO_ERROR
    assert reply.outputs == ((2, vadd_expected(7)),)


def test_wrong_answer_is_data():
    reply = measure_object(request(VSUB, "vsub", ref_outputs=((2, vadd_expected(0)),)))
    assert reply.error_no == MeasureErrorNo.WRONG_ANSWER
    assert reply.costs == () and "64 of 64 elements differ" in reply.error


def test_unwritten_output_element_is_caught():
    reply = measure_object(request(SHORT, "short", ref_outputs=((2, vadd_expected(0)),)))
    assert reply.error_no == MeasureErrorNo.WRONG_ANSWER
    assert "1 of 64" in reply.error and "index 63" in reply.error


def test_tolerances():
    near = np.frombuffer(vadd_expected(0), dtype="float32") * np.float32(1 + 5e-5)
    ok = measure_object(request(VADD, "vadd", ref_outputs=((2, near.tobytes()),)))
    assert ok.error_no == MeasureErrorNo.NO_ERROR
    far = np.frombuffer(vadd_expected(0), dtype="float32") * np.float32(1 + 1e-3)
    bad = measure_object(request(VADD, "vadd", ref_outputs=((2, far.tobytes()),)))
    assert bad.error_no == MeasureErrorNo.WRONG_ANSWER


def _both_checks(got: np.ndarray, expected: np.ndarray) -> tuple[bool, bool]:
    """(the measure worker's verdict, apply's verdict) on ``got``."""
    return (compare_outputs({0: got}, ((0, expected.tobytes()),)) == "",
            matches_reference([got], [expected])[0])


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_the_worker_check_accepts_what_apply_accepts(dtype):
    """Tuning's check of a candidate (the worker's) and apply's check of the tuned kernel are one
    rule: an output off by half the dtype's tolerance passes both, one off by four times fails both."""
    rng = np.random.default_rng(0)
    expected = (rng.uniform(0.5, 1, 256) * rng.choice([-1, 1], 256)).astype(dtype)
    expected[0] = 1  # the scale of the absolute part
    rtol, _ = tolerance(dtype)
    assert _both_checks((expected + np.asarray(0.5 * rtol, dtype)).astype(dtype), expected) == (True, True)
    assert _both_checks((expected + np.asarray(4 * rtol, dtype)).astype(dtype), expected) == (False, False)


def test_integer_outputs_must_match_exactly():
    expected = np.arange(64, dtype="int32")
    assert _both_checks(expected.copy(), expected) == (True, True)
    assert _both_checks(expected + 1, expected) == (False, False)


def test_unloadable_object_is_a_runtime_error():
    reply = measure_object(MeasureRequest(b"not an object file", "vadd", ARG_SPECS))
    assert reply.error_no == MeasureErrorNo.RUNTIME_DEVICE and reply.error
    reply = measure_object(request(VADD, "no_such_symbol"))
    assert reply.error_no == MeasureErrorNo.RUNTIME_DEVICE and "no_such_symbol" in reply.error


def test_cache_flush_runs_before_each_round():
    plain = measure_object(request(VADD, "vadd", timing=TimingOptions(number=1, repeat=3)))
    flushed = measure_object(request(VADD, "vadd",
                                     timing=TimingOptions(number=1, repeat=3, enable_cpu_cache_flush=True)))
    assert flushed.error_no == MeasureErrorNo.NO_ERROR and len(flushed.costs) == 3
    assert flushed.run_time - plain.run_time > 0.005  # three 64 MiB writes...
    assert all(c < 1e-3 for c in flushed.costs)  # ...that are not part of the costs


def test_inputs_are_reproducible_from_the_seed():
    a = random_arguments(ARG_SPECS, 3)
    b = random_arguments(ARG_SPECS, 3)
    assert all(np.array_equal(x, y) for x, y in zip(a, b, strict=True))
    assert not np.array_equal(a[0], random_arguments(ARG_SPECS, 4)[0])


def test_outputs_are_guarded_and_poisoned_on_the_device():
    arrays = kernel_arguments(cpu(), ARG_SPECS, 3, [2], poisoned=True)
    inputs = random_arguments(ARG_SPECS, 3)[:2]
    assert all(np.array_equal(x, y) for x, y in zip(arrays[:2], inputs, strict=True))
    assert np.isnan(arrays[2]).all() and arrays[2].flags.writeable
    assert (arrays[2].ctypes.data + arrays[2].nbytes) % mmap.PAGESIZE == 0  # ends at the guard page


def test_one_element_overrun_crashes_the_worker_not_the_tuner(worker):
    out = worker.call(MEASURE_FUNC, request(OVERRUN, "overrun"), timeout=10)
    assert out.status is CallStatus.DIED and "SIGSEGV" in out.detail
    ok = worker.call(MEASURE_FUNC, request(VADD, "vadd"), timeout=10)
    assert ok.status is CallStatus.OK and ok.value.error_no == MeasureErrorNo.NO_ERROR


def test_null_store_crashes_the_worker(worker):
    out = worker.call(MEASURE_FUNC, request(CRASH, "crash"), timeout=10)
    assert out.status is CallStatus.DIED
