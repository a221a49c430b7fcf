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
(``builder.n_parallel < os.cpu_count()``), else it is sequential. On this project's 2-core
machines the default ``LocalBuilder()`` uses both cores, so tuning is sequential unless the
builder is given ``n_parallel=1`` (``benchmarks/bench_measure_throughput.py`` compares both).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import Any

from tunecli.engine.autotvm.measure_types import MeasureInput, MeasureResult
from tunecli.engine.measure.builder import Builder, LocalBuilder
from tunecli.engine.measure.runner import LocalRunner, Runner


def measure_option(builder: Builder | str, runner: Runner | str) -> dict:
    """Bundle a builder and a runner for ``Tuner.tune``.

    Parameters
    ----------
    builder : Builder or "local"
    runner : Runner or "local"

    Returns
    -------
    dict
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
    """Whether a batch measures kernels while other builds of it still run (see the module doc)."""
    if overlap == "auto":
        overlap = builder.n_parallel < (os.cpu_count() or 1)
    elif not isinstance(overlap, bool):
        raise ValueError(f"Invalid overlap: {overlap!r} (use True, False or 'auto')")
    return overlap and hasattr(builder, "iter_build") and hasattr(runner, "run_one")


MeasureBatch = Callable[[Sequence[MeasureInput]], list[MeasureResult]]


def create_measure_batch(task: Any, option: dict, overlap: bool | str = "auto") -> MeasureBatch:
    """Return ``measure_batch(inputs) -> [MeasureResult]`` for ``task``.

    Parameters
    ----------
    task : Task
    option : dict
        From :func:`measure_option`.
    overlap : bool or "auto"
        Measure each kernel as soon as it is built (see the module doc).

    Returns
    -------
    callable
        With attributes ``n_parallel`` (the builder's; tuners propose that many configs per
        batch) and ``attach_objects`` (what ``runner.set_task`` returned).
    """
    builder, runner = option["builder"], option["runner"]
    attach_objects = runner.set_task(task)
    builder.set_task(task, runner.get_build_kwargs())
    pipelined = should_overlap(builder, runner, overlap)

    def measure_batch(measure_inputs: Sequence[MeasureInput]) -> list[MeasureResult]:
        if not pipelined:
            return runner.run(measure_inputs, builder.build(measure_inputs))
        results: list[Any] = [None] * len(measure_inputs)
        for index, built in builder.iter_build(measure_inputs):
            results[index] = runner.run_one(measure_inputs[index], built)
        return results

    measure_batch.n_parallel = builder.n_parallel  # type: ignore[attr-defined]
    measure_batch.attach_objects = attach_objects  # type: ignore[attr-defined]
    measure_batch.overlap = pipelined  # type: ignore[attr-defined]
    return measure_batch
