"""The tuning loop shared by every tuner (TVM's ``Tuner.tune``).

A tuner proposes configs (``next_batch``), the loop measures them, feeds the results back
(``update``) and runs the callbacks; it tracks the best config and stops early after
``early_stopping`` trials without improvement.  Every tuner keeps ``visited`` (indices already
proposed or measured) and never proposes a visited index again: ``mark_visited`` and
``load_history`` add indices measured in an earlier run, so a resumed run skips them.

Callbacks follow TVM's protocol, ``cb(tuner, inputs, results)`` after every batch, except
*streaming* callbacks — those with an ``on_result(tuner, inp, res)`` method, like
``log_to_file`` — which get each measurement as soon as it finishes (the ``on_result`` hook of
``measure_batch``), before the batch is over, and are not called again for the batch.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Protocol, TypeAlias

import numpy as np

from tunecli.engine.log.task_history import TaskHistory, task_history
from tunecli.engine.measure import create_measure_batch
from tunecli.engine.measure.batch import MeasureOption
from tunecli.engine.measure.result import MeasureInput, MeasureResult
from tunecli.engine.task.scope import GLOBAL_SCOPE
from tunecli.engine.task.space import ConfigEntity
from tunecli.engine.tuner.callback import format_si_prefix

if TYPE_CHECKING:
    from tunecli.engine.log.record import Record
    from tunecli.engine.task.task import Task

logger = logging.getLogger("autotvm")

MeasureBatch = Callable[..., list[MeasureResult]]
#: What ``Tuner.tune`` measures with: ``measure_option(builder, runner)`` or a ``measure_batch`` callable.
MeasureSetting: TypeAlias = MeasureOption | MeasureBatch


class StreamingCallback(Protocol):
    """A callback that takes each measurement as soon as it finishes (``log_to_file``'s)."""

    def on_result(self, tuner: Tuner, inp: MeasureInput, res: MeasureResult) -> None:
        """Handle one measurement of ``tuner``'s task."""


def _streams(callback: object) -> bool:
    """True when ``callback`` takes results one by one (has an ``on_result`` method)."""
    return callable(getattr(callback, "on_result", None))


def make_measure_batch(task: Task, measure_option: MeasureSetting) -> MeasureBatch:
    """Return ``measure_batch(inputs) -> results`` (with ``.n_parallel``) for ``measure_option``.

    Parameters
    ----------
    task : Task
    measure_option : dict or callable
        The dict of ``measure_option(builder, runner)``, or a ready ``measure_batch`` callable.

    Returns
    -------
    callable
        ``measure_batch(inputs)``; also ``measure_batch(inputs, on_result=hook)`` when it declares
        ``reports_each_result = True`` (see :func:`tunecli.engine.measure.create_measure_batch`).
    """
    if callable(measure_option):
        return measure_option
    return create_measure_batch(task, measure_option)


def _error_text(res: MeasureResult) -> str:
    if res.error is not None:
        return f"{res.error_message}\n{res.error}"
    return f"{res.error_no!r}: {res.error_message}"


class Tuner:
    """Base class of tuners.

    Parameters
    ----------
    task : Task
    seed : int, optional
        Seed of the tuner's random generator: the same seed gives the same sequence.
    """

    def __init__(self, task: Task, seed: int | None = None, **kwargs: object):
        self.param = kwargs
        self.task = task
        self.space = task.config_space
        self.seed = seed
        self.rng = np.random.default_rng(seed)
        self.visited: set[int] = set()
        self.recorder = None
        self.best_config: ConfigEntity | None = None
        self.best_flops = 0.0
        self.best_measure_pair: Record | None = None
        self.best_iter = 0
        self.error_ct_threshold = 150
        self.ttl: int | None = None
        self.n_trial: int | None = None
        self.early_stopping: int | None = None

    # --------------------------------------------------------------- to implement
    def has_next(self) -> bool:
        """Return True while there are configs left to propose.

        Returns
        -------
        bool
        """
        raise NotImplementedError

    def next_batch(self, batch_size: int) -> list[ConfigEntity]:
        """Return up to ``batch_size`` new configs to measure (never a visited one).

        Parameters
        ----------
        batch_size : int

        Returns
        -------
        list of ConfigEntity
        """
        raise NotImplementedError

    def update(self, inputs: list[MeasureInput], results: list[MeasureResult]) -> None:
        """Learn from measured results.

        Parameters
        ----------
        inputs : list of MeasureInput
        results : list of MeasureResult
        """

    # --------------------------------------------------------------- history
    def mark_visited(self, indices: Iterable[int]) -> None:
        """Never propose these config indices (measured earlier, e.g. in the log being resumed).

        Parameters
        ----------
        indices : iterable of int
        """
        for index in indices:
            index = int(index)
            if 0 <= index < self.space.range_length and self.space.is_index_valid(index):
                self.visited.add(index)

    def load_history(self, data_set: Iterable[Record], min_seed_records: int | None = None) -> None:
        """Load earlier records: configs of this task (same workload and target) are marked visited.

        Parameters
        ----------
        data_set : iterable of (MeasureInput, MeasureResult)
        min_seed_records : int, optional
            Minimum number of records to train a transfer-learning model (model-based tuners;
            default their ``min_seed_records`` option, 100, where TVM's is 500).
        """
        records = list(data_set)
        self.resume(task_history(self.task, records), records, min_seed_records)

    def resume(self, history: TaskHistory, data_set: Sequence[Record] = (),
               min_seed_records: int | None = None) -> None:
        """Start from this task's history (``log.task_history``): its configs are never proposed.

        Parameters
        ----------
        history : TaskHistory
            This task's records, built once by whoever read the log.
        data_set : sequence of (MeasureInput, MeasureResult)
            Every record known (model-based tuners transfer-learn from those of other tasks).
        min_seed_records : int, optional
            Minimum number of records to train a transfer-learning model (model-based tuners;
            default their ``min_seed_records`` option).
        """
        self.mark_visited(inp.config.index for inp, _ in history.records)

    def set_error_threshold(self, threshold: int) -> None:
        """Switch the ``autotvm`` logger to DEBUG after this many consecutive errors.

        Parameters
        ----------
        threshold : int
        """
        self.error_ct_threshold = threshold

    def reset(self) -> None:
        """Forget the best config found."""
        self.best_config = None
        self.best_flops = 0.0
        self.best_measure_pair = None

    # --------------------------------------------------------------- the loop
    def tune(self, n_trial: int, measure_option: MeasureSetting, early_stopping: int | None = None,
             callbacks: Sequence[Callable[..., None]] = (), si_prefix: str = "G") -> None:
        """Measure up to ``n_trial`` configs proposed by this tuner.

        Parameters
        ----------
        n_trial : int
        measure_option : dict or callable
            From ``measure_option(builder, runner)``, or a ``measure_batch`` callable.
        early_stopping : int, optional
            Stop after this many trials without a better config.
        callbacks : sequence of callable
            Each is called as ``cb(tuner, inputs, results)`` after every batch; one with an
            ``on_result`` method (``log_to_file``) instead gets ``cb.on_result(tuner, inp, res)``
            as soon as each measurement finishes.
        si_prefix : str
            Unit prefix of FLOPS in log messages.
        """
        format_si_prefix(0, si_prefix)  # reject a bad prefix before starting any worker
        measure_batch = make_measure_batch(self.task, measure_option)
        n_parallel = getattr(measure_batch, "n_parallel", 1) or 1
        early_stopping = early_stopping or 10**9
        self.n_trial = n_trial
        self.early_stopping = early_stopping
        old_level = logger.level
        GLOBAL_SCOPE.in_tuning = True
        try:
            i, error_ct, errors = self._loop(measure_batch, n_parallel, n_trial, early_stopping,
                                             callbacks, si_prefix, old_level)
        finally:
            GLOBAL_SCOPE.in_tuning = False
            logger.setLevel(old_level)
        if i > 0 and error_ct == i:
            logger.warning("Could not find any valid schedule for task %s. Its errors: %s", self.task,
                           _error_summary(errors))

    def _loop(self, measure_batch: MeasureBatch, n_parallel: int, n_trial: int, early_stopping: int,
              callbacks: Sequence[Callable[..., None]], si_prefix: str, old_level: int) -> tuple:
        i = error_ct = 0
        errors: list[str] = []
        streaming = [cb for cb in callbacks if _streams(cb)]
        batch_callbacks = [cb for cb in callbacks if not _streams(cb)]
        while i < n_trial:
            if not self.has_next():
                break
            configs = self.next_batch(min(n_parallel, n_trial - i))
            if not configs:
                break
            inputs = [MeasureInput(self.task.target, self.task, config) for config in configs]
            results = self._measure(measure_batch, inputs, streaming)
            for k, (inp, res) in enumerate(zip(inputs, results, strict=True)):
                config = inp.config
                flops = res.flops(inp.task.flop)
                if res.ok:
                    error_ct = 0
                    result_msg: MeasureResult | str = res
                else:
                    error_ct += 1
                    errors.append(_error_text(res))
                    result_msg = errors[-1]
                if flops > self.best_flops:
                    self.best_flops = flops
                    self.best_config = config
                    self.best_measure_pair = (inp, res)
                    self.best_iter = i + k
                logger.debug("No: %d\t%sFLOPS: %.2f/%.2f\tresult: %s\t%s", i + k + 1, si_prefix,
                             format_si_prefix(flops, si_prefix),
                             format_si_prefix(self.best_flops, si_prefix), result_msg, config)
            i += len(results)
            self.ttl = min(early_stopping + self.best_iter, n_trial) - i
            self.update(inputs, results)
            for callback in batch_callbacks:
                callback(self, inputs, results)
            if i >= self.best_iter + early_stopping:
                logger.debug("Early stopped. Best iter: %d.", self.best_iter)
                break
            if error_ct > self.error_ct_threshold:
                logger.warning("Too many errors happen in the tuning. Switching to debug mode.")
                logger.setLevel(logging.DEBUG)
            else:
                logger.setLevel(old_level)
        return i, error_ct, errors

    def _measure(self, measure_batch: MeasureBatch, inputs: list[MeasureInput],
                 streaming: Sequence[StreamingCallback]) -> list[MeasureResult]:
        """Measure a batch, handing each result to the streaming callbacks once, when it is ready."""
        if not streaming:
            return measure_batch(inputs)
        reported: set[int] = set()

        def on_result(index: int, result: MeasureResult) -> None:
            if index in reported:
                return
            reported.add(index)
            for callback in streaming:
                callback.on_result(self, inputs[index], result)

        if getattr(measure_batch, "reports_each_result", False):
            results = measure_batch(inputs, on_result=on_result)
        else:
            results = measure_batch(inputs)
        for index, result in enumerate(results):  # those the measurement did not report
            on_result(index, result)
        return results


def _error_summary(errors: Sequence[str], shown: int = 5) -> str:
    """The distinct error messages, most frequent first, each with its count."""
    counts = Counter(errors).most_common()
    parts = [f"{message} (x{n})" if n > 1 else message for message, n in counts[:shown]]
    if len(counts) > shown:
        parts.append(f"and {len(counts) - shown} other errors")
    return "; ".join(parts)
