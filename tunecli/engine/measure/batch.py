"""``measure_option`` and ``create_measure_batch``: how a tuner gets its candidates measured.

``measure_batch(inputs)`` builds every input (in the builder's worker processes) and measures
the built kernels one at a time (in the runner's worker process). Two schedules:

* **sequential** (TVM's): build the whole batch, then measure it. While a kernel is timed no
  build runs, so timings are clean; builder cores idle during measurements.
* **overlapped**: measure each kernel as soon as its build finishes while the other builds
  go on in their processes. Faster, but a build running on a core next to the one being
  timed perturbs the timing (shared caches, memory bandwidth, clock boost) — and when the
  builders use every core, the measured kernel competes with them for a core outright.

``overlap="auto"`` (the default) overlaps only when the builders leave a core free
(``builder.n_parallel < os.cpu_count()``), else it is sequential. The default
``LocalBuilder()`` builds on every core, so tuning is sequential unless the builder is given
fewer (``benchmarks/bench_measure_throughput.py`` compares both).

Overlapping needs a runner that times kernels one after another (it declares
``measures_one_at_a_time``: ``LocalRunner`` does; ``RPCRunner``, which spreads a batch over its
devices, does not).

Either way ``measure_batch(inputs, on_result=hook)`` calls ``hook(index, result)`` as soon as
each result is ready (a failed build once it is known, a measurement once it is timed), in the
caller's thread, before the batch returns — so a tuner can log every finished measurement
without waiting for the batch.  Each index is reported exactly once.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, TypedDict

from tunecli.engine.measure.builder import Builder, BuildResult, LocalBuilder
from tunecli.engine.measure.local_runner import LocalRunner
from tunecli.engine.measure.result import MeasureInput, MeasureResult
from tunecli.engine.measure.runner import OnResult, Runner

if TYPE_CHECKING:
    from tunecli.engine.task.task import Task


class MeasureOption(TypedDict):
    """What :func:`measure_option` returns (a plain dict, as TVM's)."""

    builder: Builder
    runner: Runner


def measure_option(builder: Builder | str, runner: Runner | str) -> MeasureOption:
    """Bundle a builder and a runner for ``Tuner.tune``.

    Parameters
    ----------
    builder : Builder or "local"
    runner : Runner or "local"

    Returns
    -------
    MeasureOption
        ``{"builder": builder, "runner": runner}``.

    Raises
    ------
    ValueError
        For any other string.
    """
    if isinstance(builder, str):
        if builder != "local":
            raise ValueError("Invalid builder: " + builder)
        builder = LocalBuilder()
    if isinstance(runner, str):
        if runner != "local":
            raise ValueError("Invalid runner: " + runner)
        runner = LocalRunner()
    return {"builder": builder, "runner": runner}


def should_overlap(builder: Builder, runner: Runner, overlap: bool | str = "auto") -> bool:
    """Whether a batch measures kernels while other builds of it still run (see the module doc).

    Only a runner that declares :attr:`Runner.measures_one_at_a_time` is fed kernel by kernel.
    """
    if overlap == "auto":
        overlap = builder.n_parallel < (os.cpu_count() or 1)
    elif not isinstance(overlap, bool):
        raise ValueError(f"Invalid overlap: {overlap!r} (use True, False or 'auto')")
    return overlap and runner.measures_one_at_a_time


class MeasureBatch:
    """``measure_batch(inputs, on_result=None) -> [MeasureResult]`` for one task (see
    :func:`create_measure_batch`).

    Attributes
    ----------
    n_parallel : int
        The builder's; tuners propose that many configs per batch.
    attach_objects : object
        What ``runner.set_task`` returned (kept alive with the batch).
    overlap : bool
        Whether kernels are measured while other builds of the batch go on.
    reports_each_result : bool
        Always True: ``on_result(index, result)`` is called as each result is ready.
    """

    reports_each_result = True

    def __init__(self, builder: Builder, runner: Runner, attach_objects: object, overlap: bool) -> None:
        self.builder, self.runner = builder, runner
        self.n_parallel = builder.n_parallel
        self.attach_objects = attach_objects
        self.overlap = overlap

    def __call__(self, measure_inputs: Sequence[MeasureInput],
                 on_result: OnResult | None = None) -> list[MeasureResult]:
        """Build and measure ``measure_inputs``; results in input order."""
        if not self.overlap:
            return self._run(measure_inputs, self.builder.build(measure_inputs), on_result)
        results: dict[int, MeasureResult] = {}
        for index, built in self.builder.iter_build(measure_inputs):
            result = results[index] = self.runner.run_one(measure_inputs[index], built)
            if on_result is not None:
                on_result(index, result)
        return [results[index] for index in range(len(measure_inputs))]

    def _run(self, inputs: Sequence[MeasureInput], built: list[BuildResult | MeasureResult],
             on_result: OnResult | None) -> list[MeasureResult]:
        """``runner.run`` with the per-result hook (called after the batch for runners that do not
        report each result)."""
        if self.runner.reports_each_result:
            return self.runner.run(inputs, built, on_result=on_result)
        results = self.runner.run(inputs, built)
        if on_result is not None:
            for index, result in enumerate(results):
                on_result(index, result)
        return results


def create_measure_batch(task: Task, option: MeasureOption, overlap: bool | str = "auto") -> MeasureBatch:
    """Return ``measure_batch(inputs) -> [MeasureResult]`` for ``task``.

    Parameters
    ----------
    task : Task
    option : MeasureOption
        From :func:`measure_option`.
    overlap : bool or "auto"
        Measure each kernel as soon as it is built (see the module doc).

    Returns
    -------
    MeasureBatch
        ``measure_batch(inputs, on_result=None) -> [MeasureResult]`` (input order); ``on_result
        (index, result)`` is called as each result is ready.
    """
    builder, runner = option["builder"], option["runner"]
    attach_objects = runner.set_task(task)
    builder.set_task(task, runner.get_build_kwargs())
    return MeasureBatch(builder, runner, attach_objects, should_overlap(builder, runner, overlap))
