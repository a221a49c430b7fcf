"""TVM's ``autotvm.measure.executor`` and ``LocalRunner.ref_input``: a script that gives its runner
fixed inputs and its own executor sees each measurement submitted there with ``ref_input``."""

from __future__ import annotations

import concurrent.futures
import inspect

import numpy as np
import pytest

from tunecli.autotvm import measure
from tunecli.autotvm.measure import executor
from tunecli.autotvm.measure.measure import MeasureErrorNo, MeasureResult


def test_the_executor_names_are_the_standard_librarys():
    assert executor.Executor is concurrent.futures.Executor
    assert executor.Future is concurrent.futures.Future
    assert issubclass(executor.InlineExecutor, executor.Executor)
    assert isinstance(measure.LocalRunner().executor, executor.Executor)


class Recording(executor.InlineExecutor):
    """Runs each call at once and keeps the ``ref_input`` each one was given."""

    def __init__(self) -> None:
        self.given: list[object] = []

    def submit(self, fn, /, *args, **kwargs):
        self.given.append(inspect.signature(fn).bind(*args, **kwargs).arguments["ref_input"])
        return super().submit(fn, *args, **kwargs)


def test_each_measurement_is_submitted_with_the_runners_ref_input():
    runner = measure.LocalRunner()
    arrays = [np.ones((4, 4), "float32") for _ in range(3)]
    with pytest.warns(RuntimeWarning):
        runner.ref_input = arrays
    runner.executor = Recording()
    failed = [MeasureResult(("no",), MeasureErrorNo.COMPILE_HOST, 0.1, 1.0) for _ in range(2)]
    assert runner.run([None, None], failed) == failed  # failed builds pass through the executor
    assert runner.executor.given == [arrays, arrays]
    runner.close()
