"""``LocalRunner``: time built kernels one at a time in a local worker process.

Each kernel is measured in a persistent spawned :class:`Worker` — a process separate from the
tuner and the builders, so a kernel that segfaults (RUNTIME_DEVICE) or never returns
(RUN_TIMEOUT) only costs a replaced worker, and measurements never compete with each other for
cores. The worker runs :func:`tunecli.engine.measure.timing.measure_object` (TVM's
``time_evaluator``) on a :class:`MeasureRequest` carrying the runner's :class:`TimingOptions`;
the runner post-processes the reply like every runner (:mod:`tunecli.engine.measure.runner`)
and rests ``cooldown_interval`` seconds after each measurement (see
:mod:`tunecli.engine.measure.timing_options` for why its defaults differ from TVM's).

As in TVM, each measurement is submitted to ``runner.executor`` (an
:class:`~tunecli.engine.measure.executor.InlineExecutor` unless replaced), the call taking the
runner's ``ref_input`` (fixed argument contents, TVM's attribute) as a keyword.
"""

from __future__ import annotations

import logging
import time
import warnings
from collections.abc import Sequence
from concurrent.futures import Executor
from typing import TYPE_CHECKING

import numpy as np

from tunecli.engine.measure import expected_outputs as reference
from tunecli.engine.measure.arrays import ArgSpecT
from tunecli.engine.measure.builder import BuildResult
from tunecli.engine.measure.executor import InlineExecutor
from tunecli.engine.measure.result import MeasureErrorNo, MeasureInput, MeasureResult
from tunecli.engine.measure.runner import SEED, OnResult, RefOutputs, Runner, result_from_reply
from tunecli.engine.measure.timing import measure_in_worker
from tunecli.engine.measure.timing_options import TimingOptions
from tunecli.engine.measure.worker import Worker
from tunecli.errors import TuneError

if TYPE_CHECKING:
    from tunecli.engine.task.task import Task

logger = logging.getLogger("autotvm")

#: Measurements a runner child makes before it is recycled (JIT-linked code is unloaded after
#: each measurement, but fragments of the JIT's memory are not returned to the system).
WORKER_MAX_JOBS = 1000


class LocalRunner(Runner):
    """Measure kernels one at a time in a local worker process (TVM's ``LocalRunner``).

    The keyword arguments are TVM's; each one given overrides the same setting of ``timing``
    (see :class:`TimingOptions` for what they mean and their defaults).

    Parameters
    ----------
    timeout : float, optional
        Seconds one measurement (load, check, all rounds) may take; then RUN_TIMEOUT.
    number, repeat : int, optional
        Calls per timed round, timed rounds.
    min_repeat_ms : float, optional
        Grow ``number`` until a round lasts at least this long.
    cooldown_interval : float, optional
        Seconds to sleep after each measurement.
    enable_cpu_cache_flush : bool, optional
        Flush the caches before each round; use with ``number=1``.
    check_correctness : bool, optional
        Compare outputs with a reference (the task's numpy ``reference`` if it has one, else
        the first config of its space): mismatch → WRONG_ANSWER.
    warmup_ms : float, optional
        Milliseconds of untimed calls before the timed rounds (not in TVM).
    timing : TimingOptions, optional
        All of the above in one record.

    Attributes
    ----------
    executor : concurrent.futures.Executor
        Where each measurement's call is submitted (default :class:`InlineExecutor`).
    ref_input : list of numpy.ndarray or None
        TVM's fixed inputs: one array per kernel argument, used instead of random contents
        (for operators whose inputs must hold valid values, e.g. indices); outputs are then not
        checked for correctness. Setting it warns, as in TVM.
    """

    reports_each_result = True
    measures_one_at_a_time = True

    def __init__(self, timeout: float | None = None, number: int | None = None, repeat: int | None = None,
                 min_repeat_ms: float | None = None, cooldown_interval: float | None = None,
                 enable_cpu_cache_flush: bool | None = None, check_correctness: bool | None = None,
                 warmup_ms: float | None = None, *, timing: TimingOptions | None = None) -> None:
        timing = (timing or TimingOptions()).with_values(
            timeout=timeout, number=number, repeat=repeat, min_repeat_ms=min_repeat_ms,
            cooldown_interval=cooldown_interval, enable_cpu_cache_flush=enable_cpu_cache_flush,
            check_correctness=check_correctness, warmup_ms=warmup_ms)
        super().__init__(n_parallel=1, timing=timing)
        self.worker = Worker(WORKER_MAX_JOBS, preload=("tunecli.engine.measure.timing",),
                             name="tunecli-runner")
        self._refs: dict[tuple, RefOutputs | None] = {}
        self._ref_input: list[np.ndarray] | None = None
        self.executor: Executor = InlineExecutor()

    @property
    def ref_input(self) -> list[np.ndarray] | None:
        """Fixed contents of the kernel's arguments (None: seeded random ones)."""
        return self._ref_input

    @ref_input.setter
    def ref_input(self, value: list[np.ndarray] | None) -> None:
        if value is not None:
            warnings.warn("ref_input fixes the inputs of every measured kernel: they must match the "
                          "arguments of each config's kernel (shapes, and any layout the template "
                          "transforms)", RuntimeWarning, stacklevel=2)
        self._ref_input = value

    def set_task(self, task: Task) -> object:
        """Prepare to measure ``task`` and start the worker warming up."""
        super().set_task(task)
        self._refs.clear()
        self.worker.start()
        return None

    def close(self) -> None:
        """Stop the worker (it is started again on the next measurement)."""
        self.worker.close()

    def run(self, measure_inputs: Sequence[MeasureInput],
            build_results: Sequence[BuildResult | MeasureResult],
            on_result: OnResult | None = None) -> list[MeasureResult]:
        """Measure each built kernel in turn (see :meth:`Runner.run`); failed builds pass through."""
        results = []
        for index, (inp, built) in enumerate(zip(measure_inputs, build_results, strict=True)):
            results.append(self.run_one(inp, built))
            if on_result is not None:
                on_result(index, results[-1])
        return results

    def run_one(self, measure_input: MeasureInput,
                build_result: BuildResult | MeasureResult) -> MeasureResult:
        """Measure one built kernel through ``executor`` (see :meth:`run`)."""
        future = self.executor.submit(self.measure, measure_input, build_result, ref_input=self.ref_input)
        try:
            return future.result()
        except TimeoutError as err:  # an executor that enforces its own time limit
            return MeasureResult.failure(MeasureErrorNo.RUN_TIMEOUT, str(err), self.timeout, err)

    def measure(self, measure_input: MeasureInput, build_result: BuildResult | MeasureResult,
                ref_input: Sequence[np.ndarray] | None = None) -> MeasureResult:
        """The call :meth:`run_one` submits: time ``build_result`` in the worker (a failed build
        passes through), on ``ref_input`` when given."""
        if not isinstance(build_result, BuildResult):
            return build_result
        request = self.request(measure_input, build_result, ref_input)
        start = time.perf_counter()
        reply = measure_in_worker(self.worker, request)
        result = result_from_reply(reply, build_result.time_cost, time.perf_counter() - start, self.timeout)
        if result.error_no == MeasureErrorNo.WRONG_ANSWER:
            logger.warning("Wrong Answer! %s", reply.error)
        if self.timing.cooldown_interval > 0:
            time.sleep(self.timing.cooldown_interval)
        return result

    def reference_outputs(self, task: Task, specs: tuple[ArgSpecT, ...],
                          outputs: tuple[int, ...]) -> RefOutputs:
        """Reference outputs for ``task`` with this argument layout (made once; empty if impossible)."""
        key = (task.name, task.args, str(task.target), specs, outputs)
        if key not in self._refs:
            func = task.reference
            try:
                if func is not None:
                    self._refs[key] = reference.numpy_reference(func, specs, outputs, SEED)
                else:
                    self._refs[key] = reference.built_reference(self.worker, task, specs, outputs,
                                                                SEED, self.timeout)
            except TuneError as err:
                logger.warning("%s; correctness is not checked for this task", err)
                self._refs[key] = None
        return self._refs[key] or ()
