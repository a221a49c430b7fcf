"""The ``Runner`` protocol: what every runner (local, RPC) offers the tuning loop.

A runner times built kernels and turns the outcomes into :class:`MeasureResult`\\ s. Every
runner takes its settings as one :class:`TimingOptions` (``runner.timing``), hands them whole to
the measuring worker inside each :class:`MeasureRequest`, and post-processes the replies the
same way (:func:`result_from_reply`, autotvm's rules): with more than two costs the minimum and
maximum are dropped, ``all_cost`` is the run's wall time plus the build time, and
``timestamp`` the time it finished.

Runners declare what they can do instead of being probed: :attr:`Runner.reports_each_result`
(``run`` calls ``on_result`` as each result is ready) and :attr:`Runner.measures_one_at_a_time`
(kernels are timed one after another, so a batch may time each one as soon as it is built).
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, ClassVar

import numpy as np

from tunecli.engine.measure.arrays import ArgSpecT, normalize_arg_specs, output_indices_of
from tunecli.engine.measure.builder import BuildResult
from tunecli.engine.measure.result import MeasureErrorNo, MeasureInput, MeasureResult
from tunecli.engine.measure.timing import MeasureReply, MeasureRequest
from tunecli.engine.measure.timing_options import TimingOptions
from tunecli.engine.target import Target, as_target

if TYPE_CHECKING:
    from tunecli.engine.task.task import Task

#: Seed of the random inputs of every measurement.
SEED = 0

#: ``on_result(index, result)``: one result of a batch is ready (``index`` into its inputs).
OnResult = Callable[[int, MeasureResult], None]
#: Expected outputs of a kernel on the seeded inputs: ``((argument index, raw bytes), ...)``.
RefOutputs = tuple[tuple[int, bytes], ...]


def result_from_reply(reply: MeasureReply, build_time: float, run_time: float,
                      timeout: float | None = None) -> MeasureResult:
    """autotvm's MeasureResult for a worker's reply.

    With more than two costs the minimum and maximum are dropped; a RUN_TIMEOUT costs
    ``timeout`` when given (TVM's convention).

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
        return MeasureResult.failure(MeasureErrorNo.RUN_TIMEOUT, reply.error, spent,
                                     TimeoutError(reply.error))
    if reply.error_no:
        return MeasureResult.failure(MeasureErrorNo(reply.error_no), reply.error, run_time + build_time)
    costs = tuple(reply.costs)
    if len(costs) > 2:
        costs = tuple(sorted(costs)[1:-1])
    return MeasureResult(costs, MeasureErrorNo.NO_ERROR, run_time + build_time, time.time())


class Runner(ABC):
    """What a runner offers: ``set_task``, ``get_build_kwargs``, ``run``, ``run_one``, ``close``.

    Parameters
    ----------
    timeout : float, optional
        Seconds one measurement may take (overrides ``timing.timeout``).
    n_parallel : int, optional
        Measurements at once (1 for local runners).
    timing : TimingOptions, optional
        How to time kernels (default: ``TimingOptions()``).

    Attributes
    ----------
    timing : TimingOptions
    n_parallel : int or None
    task : Task or None
        The task of :meth:`set_task`.
    """

    #: ``run`` calls ``on_result(index, result)`` as each result is ready. A runner that does not
    #: (``run(measure_inputs, build_results)`` as in TVM) has its results reported after the batch.
    reports_each_result: ClassVar[bool] = False
    #: Kernels are timed one after another, so a batch may time each kernel with :meth:`run_one`
    #: as soon as it is built while other builds go on.
    measures_one_at_a_time: ClassVar[bool] = False

    def __init__(self, timeout: float | None = None, n_parallel: int | None = None,
                 timing: TimingOptions | None = None) -> None:
        self.timing = (timing or TimingOptions()).with_values(timeout=timeout)
        self.n_parallel = n_parallel
        self.task: Task | None = None

    @property
    def timeout(self) -> float:
        """Seconds one measurement may take (``timing.timeout``)."""
        return self.timing.timeout

    def set_task(self, task: Task) -> object:
        """Prepare to measure configs of ``task``; the return value is kept alive by the caller."""
        self.task = task
        return None

    def get_build_kwargs(self) -> dict:
        """Build options the device needs (none for CPUs)."""
        return {}

    @abstractmethod
    def run(self, measure_inputs: Sequence[MeasureInput],
            build_results: Sequence[BuildResult | MeasureResult],
            on_result: OnResult | None = None) -> list[MeasureResult]:
        """Measure each built kernel; failed builds are passed through.

        Parameters
        ----------
        measure_inputs : sequence of MeasureInput
        build_results : sequence of BuildResult or MeasureResult
        on_result : callable, optional
            ``on_result(index, result)``, called as each result is ready.

        Returns
        -------
        list of MeasureResult
            One per input, in input order.
        """

    def run_one(self, measure_input: MeasureInput,
                build_result: BuildResult | MeasureResult) -> MeasureResult:
        """Measure one built kernel (a failed build is passed through)."""
        return self.run([measure_input], [build_result])[0]

    def close(self) -> None:  # noqa: B027 - optional: most runners hold nothing between batches
        """Release what the runner holds (worker processes, connections)."""

    def reference_outputs(self, task: Task, specs: tuple[ArgSpecT, ...],
                          outputs: tuple[int, ...]) -> RefOutputs:
        """Expected outputs of ``task``'s kernels with this argument layout (empty: not checked)."""
        return ()

    def request(self, measure_input: MeasureInput, build: BuildResult,
                inputs: Sequence[np.ndarray] | None = None) -> MeasureRequest:
        """The request that measures ``build`` with this runner's timing (and its reference
        outputs when ``timing.check_correctness``); ``inputs`` (TVM's ``ref_input``, one array
        per argument) replace the seeded random arguments, and then outputs are not checked (the
        references are made from the seeded ones)."""
        specs = normalize_arg_specs(build.arg_specs)
        outputs = tuple(build.output_indices or output_indices_of(build.arg_specs))
        check = self.timing.check_correctness and inputs is None
        refs = self.reference_outputs(measure_input.task, specs, outputs) if check else ()
        return MeasureRequest(build.obj, build.entry_name, specs, self.timing, seed=SEED, ref_outputs=refs,
                              output_indices=outputs, target=_device_target(measure_input.target),
                              launch=build.launch, inputs=None if inputs is None else tuple(inputs))


def _device_target(target: Target | str) -> Target | None:
    """The target a request names: None (this host) for CPU targets, whose objects the runner
    loads on its own CPU whatever ``-mcpu`` they were built for, else the target itself."""
    t = as_target(target)
    return None if t.kind == "llvm" else t
