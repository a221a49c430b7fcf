"""Runners: time built kernels and turn the outcomes into MeasureResults.

``LocalRunner`` measures one kernel at a time in a persistent spawned :class:`Worker` — a
process separate from the tuner and the builders, so a kernel that segfaults (RUNTIME_DEVICE)
or never returns (RUN_TIMEOUT) only costs a replaced worker, and measurements never compete
with each other for cores. The worker runs :func:`tunecli.engine.measure.timing.measure_object`
(TVM's ``time_evaluator``); this module applies autotvm's post-processing: with more than two
costs the minimum and maximum are dropped, ``all_cost`` is the run's wall time plus the build
time, ``timestamp`` the time it finished, and the runner sleeps ``cooldown_interval`` after
each measurement.

Two defaults differ from TVM's on purpose: every measurement first runs the kernel, untimed,
for ``warmup_ms`` (50 ms), and ``cooldown_interval`` is 0 (TVM: 0.1 s). On these machines a
core left idle runs slowly for the first tens of milliseconds of work, so TVM's pause before
each measurement made parallel kernels time at about a third of their speed (see
:mod:`tunecli.engine.measure.timing`); the warm-up removes that, and the pause only cost
0.1 s per trial.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from typing import Any

from tunecli.engine.measure import expected_outputs as reference
from tunecli.engine.measure.arrays import ArgSpecT, normalize_arg_specs, output_indices_of
from tunecli.engine.measure.builder import BuildResult
from tunecli.engine.measure.result import MeasureErrorNo, MeasureInput, MeasureResult
from tunecli.engine.measure.timing import WARMUP_MS, MeasureReply, MeasureRequest, measure_in_worker
from tunecli.engine.measure.worker import Worker
from tunecli.errors import TuneError

logger = logging.getLogger("autotvm")

#: Measurements a runner child makes before it is recycled (JIT-linked code is unloaded after
#: each measurement, but fragments of the JIT's memory are not returned to the system).
WORKER_MAX_JOBS = 1000
#: Seed of the random inputs of every measurement.
SEED = 0


def _error_result(message: str, error_no: MeasureErrorNo, all_cost: float,
                  exc: BaseException | None = None) -> MeasureResult:
    return MeasureResult((message, exc or TuneError(message)), error_no, all_cost, time.time())


def result_from_reply(reply: MeasureReply, build_time: float, run_time: float,
                      timeout: float | None = None) -> MeasureResult:
    """autotvm's MeasureResult for a reply (also used by RPC runners).

    With more than two costs the minimum and maximum are dropped; errors carry
    ``(message, exception)`` as costs; a RUN_TIMEOUT costs ``timeout`` when given (TVM's
    convention).

    Parameters
    ----------
    reply : MeasureReply
    build_time : float
        Seconds the build took.
    run_time : float
        Seconds the measurement took, seen from the tuner.
    timeout : float, optional
        The measurement's timeout.

    Returns
    -------
    MeasureResult
    """
    if reply.error_no == MeasureErrorNo.RUN_TIMEOUT:
        spent = timeout if timeout is not None else run_time + build_time
        return _error_result(reply.error, MeasureErrorNo.RUN_TIMEOUT, spent, TimeoutError(reply.error))
    if reply.error_no:
        return _error_result(reply.error, MeasureErrorNo(reply.error_no), run_time + build_time)
    costs = tuple(reply.costs)
    if len(costs) > 2:
        costs = tuple(sorted(costs)[1:-1])
    return MeasureResult(costs, MeasureErrorNo.NO_ERROR, run_time + build_time, time.time())


class Runner:
    """Base of runners: ``run(measure_inputs, build_results) -> [MeasureResult]``.

    Parameters
    ----------
    timeout : float
        Seconds one measurement may take.
    n_parallel : int, optional
        Measurements at once (1 for local runners).
    """

    def __init__(self, timeout: float = 5, n_parallel: int | None = None) -> None:
        self.timeout = timeout
        self.n_parallel = n_parallel or 1
        self.task: Any = None

    def set_task(self, task: Any) -> Any:
        """Prepare to measure configs of ``task``; the return value is kept alive by the caller."""
        self.task = task
        return None

    def get_build_kwargs(self) -> dict:
        """Build options the device needs (none for CPUs)."""
        return {}

    def run(self, measure_inputs: Sequence[MeasureInput],
            build_results: Sequence[BuildResult | MeasureResult],
            on_result: Callable[[int, MeasureResult], None] | None = None) -> list[MeasureResult]:
        """Measure each built kernel; failed builds are passed through.

        ``on_result(index, result)``, when given, is called as each result is ready.
        """
        raise NotImplementedError


class LocalRunner(Runner):
    """Measure kernels one at a time in a local worker process.

    Parameters
    ----------
    timeout : float
        Seconds one measurement (load, check, all rounds) may take; then RUN_TIMEOUT.
    number : int
        Calls per timed round.
    repeat : int
        Timed rounds; each gives one cost (seconds per call).
    min_repeat_ms : float
        Grow ``number`` until a round lasts at least this long.
    cooldown_interval : float
        Seconds to sleep after each measurement (TVM's default is 0.1; see the module doc).
    enable_cpu_cache_flush : bool
        Flush the caches (64 MiB written) before each round; use with ``number=1``.
    check_correctness : bool
        Compare outputs with a reference (the task's numpy ``reference`` if it has one, else
        the first config of its space): mismatch → WRONG_ANSWER.
    warmup_ms : float
        Milliseconds of untimed calls before the timed rounds (not in TVM; see the module doc).
    """

    def __init__(self, timeout: float = 10, number: int = 4, repeat: int = 3, min_repeat_ms: float = 0,
                 cooldown_interval: float = 0.0, enable_cpu_cache_flush: bool = False,
                 check_correctness: bool = False, warmup_ms: float = WARMUP_MS) -> None:
        super().__init__(timeout, 1)
        if warmup_ms < 0:
            raise TuneError(f"LocalRunner: warmup_ms must be >= 0, got {warmup_ms}")
        self.warmup_ms = float(warmup_ms)
        self.number = number
        self.repeat = repeat
        self.min_repeat_ms = min_repeat_ms
        self.cooldown_interval = cooldown_interval
        self.enable_cpu_cache_flush = enable_cpu_cache_flush
        self.check_correctness = check_correctness
        self.worker = Worker(WORKER_MAX_JOBS, preload=("tunecli.engine.measure.timing",),
                             name="tunecli-runner")
        self._refs: dict[tuple, reference.RefOutputs | None] = {}

    def set_task(self, task: Any) -> Any:
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
            on_result: Callable[[int, MeasureResult], None] | None = None) -> list[MeasureResult]:
        """Measure each built kernel in turn; failed builds are passed through unchanged.

        Parameters
        ----------
        measure_inputs : sequence of MeasureInput
        build_results : sequence of BuildResult or MeasureResult
        on_result : callable, optional
            ``on_result(index, result)`` is called as soon as each result is ready.

        Returns
        -------
        list of MeasureResult
        """
        results = []
        for index, (inp, built) in enumerate(zip(measure_inputs, build_results, strict=True)):
            results.append(self.run_one(inp, built))
            if on_result is not None:
                on_result(index, results[-1])
        return results

    def run_one(self, measure_input: MeasureInput,
                build_result: BuildResult | MeasureResult) -> MeasureResult:
        """Measure one built kernel (see :meth:`run`)."""
        if not isinstance(build_result, BuildResult):
            return build_result
        specs = normalize_arg_specs(build_result.arg_specs)
        outputs = build_result.output_indices or output_indices_of(build_result.arg_specs)
        ref = self._reference(measure_input.task, specs, outputs) if self.check_correctness else None
        request = MeasureRequest(build_result.obj, build_result.entry_name, specs, number=self.number,
                                 repeat=self.repeat, min_repeat_ms=self.min_repeat_ms,
                                 enable_cpu_cache_flush=self.enable_cpu_cache_flush, timeout=self.timeout,
                                 seed=SEED, ref_outputs=ref or (), output_indices=tuple(outputs),
                                 warmup_ms=self.warmup_ms)
        start = time.perf_counter()
        reply = measure_in_worker(self.worker, request)
        result = result_from_reply(reply, build_result.time_cost, time.perf_counter() - start, self.timeout)
        if result.error_no == MeasureErrorNo.WRONG_ANSWER:
            logger.warning("Wrong Answer! %s", reply.error)
        if self.cooldown_interval > 0:
            time.sleep(self.cooldown_interval)
        return result

    def _reference(self, task: Any, specs: tuple[ArgSpecT, ...],
                   outputs: tuple[int, ...]) -> reference.RefOutputs | None:
        """Reference outputs for ``task`` with this argument layout (made once; None if impossible)."""
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
        return self._refs[key]
