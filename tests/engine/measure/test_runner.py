"""LocalRunner: real kernels timed in a worker; crashes, hangs and wrong answers become results."""

from __future__ import annotations

import numpy as np
import pytest

from tests.engine.kernels_ir import ARG_SPECS, CRASH, HANG, OVERRUN, VADD, VSUB, compile_ir, vadd_expected
from tests.engine.measure import measure_templates  # noqa: F401  (registers the templates)
from tunecli.engine.codegen import ArgSpec
from tunecli.engine.measure import BuildResult, LocalRunner
from tunecli.engine.measure.expected_outputs import numpy_reference
from tunecli.engine.measure.result import MeasureErrorNo, MeasureInput, MeasureResult
from tunecli.engine.task.task import create
from tunecli.errors import TuneError

SPECS = tuple(ArgSpec(name, shape, dtype) for name, (shape, dtype) in zip("abc", ARG_SPECS, strict=True))


def built(ir: str, entry: str, time_cost: float = 0.5) -> BuildResult:
    return BuildResult(compile_ir(ir), entry, SPECS, time_cost, (2,))


@pytest.fixture(scope="module")
def task():
    # the argument layout of measure_test/faulty matches the hand-written kernels: c = a + b
    t = create("measure_test/faulty", (64,), "llvm")
    t.reference = lambda a, b: a + b
    return t


@pytest.fixture(scope="module")
def runner(task):
    r = LocalRunner(timeout=2, number=2, repeat=5, cooldown_interval=0, check_correctness=True)
    r.set_task(task)
    yield r
    r.close()


def test_a_batch_with_every_kind_of_failure_completes(task, runner):
    inp = MeasureInput(task.target, task, task.config_space.get(0))
    failed_build = MeasureResult(("no", RuntimeError("no")), MeasureErrorNo.COMPILE_HOST, 0.1, 1.0)
    cases = [("vadd", built(VADD, "vadd")), ("crash", built(CRASH, "crash")), ("build", failed_build),
             ("hang", built(HANG, "hang")), ("wrong", built(VSUB, "vsub")),
             ("overrun", built(OVERRUN, "overrun")), ("vadd again", built(VADD, "vadd"))]
    pids = [runner.worker.pid]
    results = runner.run([inp] * len(cases), [c[1] for c in cases])
    got = {name: r for (name, _), r in zip(cases, results, strict=True)}
    pids.append(runner.worker.pid)

    ok = got["vadd"]
    assert ok.error_no == MeasureErrorNo.NO_ERROR
    assert len(ok.costs) == 3  # repeat=5: min and max dropped
    assert all(0 < c < 1e-3 for c in ok.costs) and list(ok.costs) == sorted(ok.costs)
    assert ok.all_cost > 0.5  # includes the build time
    assert got["vadd again"].error_no == MeasureErrorNo.NO_ERROR
    assert got["build"] is failed_build
    assert got["crash"].error_no == MeasureErrorNo.RUNTIME_DEVICE
    assert "SIGSEGV" in got["crash"].costs[0]
    assert got["hang"].error_no == MeasureErrorNo.RUN_TIMEOUT and got["hang"].all_cost == 2
    assert got["wrong"].error_no == MeasureErrorNo.WRONG_ANSWER
    assert got["overrun"].error_no == MeasureErrorNo.RUNTIME_DEVICE
    assert runner.worker.restarts >= 3 and pids[0] != pids[1]
    assert all(r.timestamp > 0 for r in results)


def test_costs_follow_number_and_repeat(task):
    r = LocalRunner(number=1, repeat=2, min_repeat_ms=5, cooldown_interval=0.05)
    r.set_task(task)
    try:
        inp = MeasureInput(task.target, task, task.config_space.get(0))
        res = r.run([inp], [built(VADD, "vadd", 0.0)])[0]
    finally:
        r.close()
    assert res.error_no == MeasureErrorNo.NO_ERROR
    assert len(res.costs) == 2  # two costs are kept as they are
    assert res.all_cost >= 0.01  # two rounds of at least 5 ms


def test_reference_outputs_from_numpy_reference(task):
    ref = numpy_reference(task.reference, ARG_SPECS, (2,), 0)
    assert ref == ((2, vadd_expected(0)),)
    with pytest.raises(TuneError, match="returned 2 arrays"):
        numpy_reference(lambda a, b: (a, b), ARG_SPECS, (2,), 0)
    assert np.frombuffer(ref[0][1], dtype="float32").shape == (64,)
