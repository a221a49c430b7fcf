"""``tunecli.testing.autotvm``: the sample matmul task and its records, and ``DummyRunner``, which
lets a tuner run its loop (real builds, no timing)."""

from __future__ import annotations

import numpy as np

from tunecli import autotvm
from tunecli.engine.measure.result import MeasureErrorNo
from tunecli.testing.autotvm import DummyRunner, get_sample_records, get_sample_task


def test_the_sample_task_splits_both_axes_of_a_matmul() -> None:
    task, target = get_sample_task(128)
    assert task.name == "testing/matmul" and task.args == (128, 128, 128, "float32")
    assert str(target).startswith("llvm")
    assert len(task.config_space) == 64 and task.config_space.dims == [8, 8]
    assert task.flop == 2 * 128**3


def test_sample_records_cost_one_second_more_each() -> None:
    records = get_sample_records(70)
    assert [res.costs[0] for _, res in records[:3]] == [1, 2, 3]
    assert records[64][0].config.index == 0  # wraps around the 64 configs


def test_a_dummy_runner_drives_a_tuner() -> None:
    task, _ = get_sample_task(16)
    seen = []
    option = autotvm.measure_option(builder=autotvm.LocalBuilder(n_parallel=1), runner=DummyRunner())
    tuner = autotvm.tuner.RandomTuner(task, seed=0)
    tuner.tune(n_trial=4, measure_option=option, callbacks=[lambda _t, _i, rs: seen.extend(rs)])
    assert len(seen) == 4 and all(r.error_no == MeasureErrorNo.NO_ERROR for r in seen)
    assert all(0 <= r.costs[0] < 1 for r in seen) and tuner.best_flops > 0


def test_the_sample_template_computes_a_matmul() -> None:
    task, target = get_sample_task(24)
    with target:
        s, args = task.instantiate(task.config_space.get(7))
    from tunecli import build
    mod = build(s, args, target)
    a, b = np.random.rand(24, 24).astype("float32"), np.random.rand(24, 24).astype("float32")
    c = np.zeros((24, 24), "float32")
    mod(a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-5)
