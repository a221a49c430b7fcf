"""The records of measurement: TimingOptions is checked once and travels whole; MeasureResult
answers "did it work, how fast" itself; every runner is a Runner and says what it can do."""

from __future__ import annotations

import dataclasses
import math

import pytest

from tests.engine.measure import measure_templates  # noqa: F401  (registers the templates)
from tunecli.engine.log.record import decode, encode
from tunecli.engine.measure import LocalBuilder, LocalRunner, Runner, TimingOptions
from tunecli.engine.measure.batch import should_overlap
from tunecli.engine.measure.result import MeasureErrorNo, MeasureInput, MeasureResult
from tunecli.engine.measure.timing_options import TIMING_OPTIONS, WARMUP_MS
from tunecli.engine.task.task import create
from tunecli.errors import RPCError, TuneError


def test_timing_options_defaults_and_order() -> None:
    t = TimingOptions()
    assert (t.number, t.repeat, t.min_repeat_ms, t.timeout) == (4, 3, 0.0, 10.0)
    assert (t.warmup_ms, t.cooldown_interval, t.enable_cpu_cache_flush, t.check_correctness) == (
        WARMUP_MS, 0.0, False, False)
    assert [opt.name for opt in TIMING_OPTIONS] == [f.name for f in dataclasses.fields(TimingOptions)]
    assert TimingOptions(timeout=4).timeout == 4.0 and isinstance(TimingOptions(timeout=4).timeout, float)


@pytest.mark.parametrize(("values", "message"), [
    ({"number": 0}, "timing option number: expected an integer >= 1, got 0"),
    ({"repeat": 2.5}, "timing option repeat: expected an integer, got 2.5"),
    ({"min_repeat_ms": -1}, "timing option min_repeat_ms: expected a number >= 0, got -1"),
    ({"timeout": 0}, "timing option timeout: expected a number > 0, got 0"),
    ({"warmup_ms": -5.0}, "timing option warmup_ms: expected a number >= 0, got -5"),
    ({"check_correctness": "yes"}, "timing option check_correctness: expected true or false, got 'yes'"),
])
def test_timing_options_are_checked_when_made(values: dict, message: str) -> None:
    with pytest.raises(TuneError) as info:
        TimingOptions(**values)
    assert str(info.value) == message


def test_tvm_style_keywords_make_one_timing_record() -> None:
    runner = LocalRunner(timeout=4, number=5, repeat=2, min_repeat_ms=100, cooldown_interval=0.1,
                         enable_cpu_cache_flush=True, check_correctness=True, warmup_ms=0)
    assert runner.timing == TimingOptions(number=5, repeat=2, min_repeat_ms=100, timeout=4,
                                          enable_cpu_cache_flush=True, warmup_ms=0, cooldown_interval=0.1,
                                          check_correctness=True)
    assert runner.timeout == 4.0 and runner.n_parallel == 1
    base = TimingOptions(number=7, repeat=9)
    assert LocalRunner(repeat=1, timing=base).timing == TimingOptions(number=7, repeat=1)
    with pytest.raises(TuneError, match="timing option warmup_ms"):
        LocalRunner(warmup_ms=-1)


def test_local_runner_implements_the_runner_protocol_and_declares_capabilities() -> None:
    local = LocalRunner()
    assert isinstance(local, Runner) and local.reports_each_result and local.measures_one_at_a_time
    assert local.get_build_kwargs() == {}
    builder = LocalBuilder(n_parallel=1)
    assert should_overlap(builder, local, True) and not should_overlap(builder, local, False)
    local.close()
    with pytest.raises(TypeError):
        Runner()  # the protocol itself measures nothing


def test_measure_result_answers_ok_cost_gflops_and_error() -> None:
    good = MeasureResult((1e-3, 3e-3), MeasureErrorNo.NO_ERROR, 0.5, 1.0)
    assert good.ok and good.mean_cost == pytest.approx(2e-3)
    assert good.flops(4e6) == pytest.approx(2e9) and good.gflops(4e6) == pytest.approx(2.0)
    assert good.gflops(None) == 0.0 and good.error is None and good.error_message == ""
    crash = MeasureResult.failure(MeasureErrorNo.RUNTIME_DEVICE, "worker was killed by SIGSEGV", 0.2)
    assert not crash.ok and crash.mean_cost == math.inf and crash.gflops(4e6) == 0.0
    assert isinstance(crash.error, TuneError) and crash.error_message == "worker was killed by SIGSEGV"
    lost = MeasureResult.failure(MeasureErrorNo.RUN_TIMEOUT, "deadline passed", 10, RPCError("device lost"))
    assert isinstance(lost.error, RPCError) and lost.costs == ("deadline passed", lost.error)  # TVM's form


def test_a_failure_read_from_a_log_names_its_kind() -> None:
    task = create("measure_test/matmul", (16,), "llvm")
    inp = MeasureInput(task.target, task, task.config_space.get(0))
    failed = MeasureResult.failure(MeasureErrorNo.COMPILE_HOST, "LLVM said no", 0.1)
    _, again = decode(encode(inp, failed))
    assert not again.ok and again.error is None and again.error_message == "COMPILE_HOST"
    assert again.mean_cost == math.inf and again.gflops(task.flop) == 0.0
