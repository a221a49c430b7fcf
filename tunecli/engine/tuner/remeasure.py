"""Measuring a task's best configs again, so that a time inflated by a load spike is not trusted.

Another process running next to a measurement can only make a kernel look slower, never
faster.  On a busy machine a tuning pass therefore ranks its configs by times that are right
for some and inflated for others, and the config kept as best may be one that was merely
measured in a quiet moment.  ``remeasure_top`` measures the ``k`` best distinct configs of a
task again, one after another, each after a short settle pause, and returns the new records.
Whoever reads the log takes the lowest cost of each config (``ApplyHistoryBest``,
``tunecli best``), so appending those records corrects the choice without changing TVM's log
format.

The rule for what is measured again, also what makes a resumed run not repeat it:

* the candidates are the ``k`` configs with the lowest cost over their valid records (each
  config once, ties by config index);
* a candidate with two or more records of its task (any outcome) has already been measured
  again and is skipped.  A tuner never measures a config that the log already holds, so
  two records of one config only come from a re-measurement.

Re-measuring can only lower a config's lowest cost, so the ``k`` best configs stay the ``k``
best: calling ``remeasure_top`` again on the same records measures nothing, and after more
tuning only the new configs among the ``k`` best are measured.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING

from tunecli.engine.log.record import Record
from tunecli.engine.log.task_records import lowest_per_config, records_of
from tunecli.engine.measure.batch import MeasureBatch
from tunecli.engine.measure.result import MeasureInput, MeasureResult
from tunecli.engine.tuner.tuner import MeasureSetting, make_measure_batch

if TYPE_CHECKING:
    from tunecli.engine.task.task import Task

#: Seconds to wait before each re-measurement (lets the builder and earlier runs quiet down).
SETTLE_SECONDS = 0.5


def remeasure_candidates(task: Task, records: Iterable[Record], k: int) -> list[MeasureInput]:
    """The configs of ``task`` that ``remeasure_top`` measures again (see the module docstring).

    Parameters
    ----------
    task : Task
    records : iterable of (MeasureInput, MeasureResult)
        A log's records; only those of ``task`` are read (``log.task_records.records_of``).
    k : int
        How many of the best configs to consider.

    Returns
    -------
    list of MeasureInput
        Inputs of ``task`` (its target, its config space's configs), the best first.
    """
    mine = records_of(records, task)
    counts = Counter(int(inp.config.index) for inp, _ in mine)
    lowest = {int(inp.config.index): res.mean_cost for inp, res in lowest_per_config(mine) if res.ok}
    top = sorted(lowest, key=lambda index: (lowest[index], index))[:max(0, int(k))]
    space = task.config_space
    return [MeasureInput(task.target, task, space.get(index)) for index in top if counts[index] < 2]


def built_measurer(task: Task, inputs: Sequence[MeasureInput],
                   measure_option: MeasureSetting) -> Callable[[int], MeasureResult]:
    """``measure(i)``: time ``inputs[i]`` of ``task``, each one as often as asked; with a builder and
    a runner every input is built first, so that no build runs next to a timing."""
    measure_batch = make_measure_batch(task, measure_option)
    if isinstance(measure_batch, MeasureBatch):
        built = measure_batch.builder.build(inputs)

        def measure(i: int) -> MeasureResult:
            return measure_batch.runner.run([inputs[i]], [built[i]])[0]
    else:
        def measure(i: int) -> MeasureResult:
            return measure_batch([inputs[i]])[0]
    return measure


def remeasure_top(task: Task, records: Iterable[Record], k: int, measure_option: MeasureSetting,
                  callbacks: Sequence[Callable[..., None]] = (),
                  settle: float = SETTLE_SECONDS) -> list[tuple[MeasureInput, MeasureResult]]:
    """Measure the ``k`` best configs of ``task`` again; return the new records.

    Parameters
    ----------
    task : Task
    records : iterable of (MeasureInput, MeasureResult)
        The records to rank (e.g. ``record.load_from_file(log)``); only those of ``task`` count.
    k : int
        How many of the best distinct configs to re-measure (those measured again already are
        skipped, see the module docstring).
    measure_option : dict or callable
        From ``measure_option(builder, runner)``, or a ``measure_batch`` callable.
    callbacks : sequence of callable
        Each called as ``cb(None, [inp], [res])`` after each measurement (``log_to_file(path)``
        appends the record).
    settle : float
        Seconds to wait before each measurement.

    Returns
    -------
    list of (MeasureInput, MeasureResult)
        The new records, in the order measured (best first); empty when nothing was due.
    """
    inputs = remeasure_candidates(task, records, k)
    if not inputs:
        return []
    measure = built_measurer(task, inputs, measure_option)
    out = []
    for i, inp in enumerate(inputs):
        time.sleep(settle)
        res = measure(i)
        out.append((inp, res))
        for callback in callbacks:
            callback(None, [inp], [res])
    return out
