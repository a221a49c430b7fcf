"""The ``layout_transform`` template: real kernels that re-block a tensor, equal to numpy, timed by
the measurement worker with positive costs (what the graph tuner adds between convolutions)."""

from __future__ import annotations

import numpy as np
import pytest

from tunecli.engine import te
from tunecli.engine.build import build
from tunecli.engine.graph.layout import convert_array
from tunecli.engine.graph_tuner.layout_transform_task import (
    layout_transform_compute,
    schedule_layout_transform,
)
from tunecli.engine.measure.batch import create_measure_batch, measure_option
from tunecli.engine.measure.builder import LocalBuilder
from tunecli.engine.measure.local_runner import LocalRunner
from tunecli.engine.measure.result import MeasureErrorNo, MeasureInput
from tunecli.engine.task.task import create

CASES = [((1, 2, 7, 5, 32), "NCHW32c", "NCHW64c"), ((1, 4, 6, 6, 16), "NCHW16c", "NCHW8c"),
         ((1, 3, 5, 5, 8), "NCHW8c", "NCHW12c"), ((1, 24, 4, 3), "NCHW", "NCHW8c"),
         ((2, 3, 4, 5, 4), "NCHW4c", "NCHW"), ((1, 1, 3, 3, 16), "NCHW16c", "NCHW16c")]


@pytest.mark.parametrize(("shape", "src", "dst"), CASES)
def test_kernel_equals_numpy(shape: tuple[int, ...], src: str, dst: str) -> None:
    data = te.placeholder(shape, name="data")
    out = layout_transform_compute(data, src, dst)
    kernel = build(schedule_layout_transform(out, src, dst), [data, out], "llvm")
    a = np.random.default_rng(0).random(shape, dtype="float32")
    b = np.zeros(tuple(int(d) for d in out.shape), "float32")
    kernel(a, b)
    assert np.array_equal(b, convert_array(a, src, dst))


def test_task_workload_is_tvms_and_its_kernel_is_timed() -> None:
    args = (("TENSOR", (1, 4, 14, 14, 16), "float32"), "NCHW16c", "NCHW8c")
    task = create("layout_transform", args, "llvm")
    assert task.workload == ("layout_transform",) + args
    assert len(task.config_space) == 1
    runner = LocalRunner(number=20, repeat=1, check_correctness=True)
    option = measure_option(LocalBuilder(n_parallel=1), runner)
    (res,) = create_measure_batch(task, option)([MeasureInput(task.target, task, task.config_space.get(0))])
    assert res.error_no == MeasureErrorNo.NO_ERROR
    assert 0 < res.mean_cost < 0.1
