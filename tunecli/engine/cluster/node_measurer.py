"""The measuring worker on a node: builds and times configs there, as a local tune would.

A :class:`NodeMeasurer` is a Ray actor pinned to one node.  It holds what a local tune holds: a
:class:`LocalBuilder` (builds in worker processes of that node) and a :class:`LocalRunner`
(kernels timed one at a time in another worker process there), and measures each chunk of
configs the driver sends with :func:`create_measure_batch`, so a kernel that crashes or hangs
only costs a replaced process and comes back as an error record, never as a dead actor.
"""

from __future__ import annotations

from collections.abc import Sequence

from tunecli.engine.measure import LocalBuilder, LocalRunner, create_measure_batch, measure_option
from tunecli.engine.measure.batch import MeasureBatch
from tunecli.engine.measure.result import MeasureInput, MeasureResult
from tunecli.engine.measure.timing_options import TimingOptions
from tunecli.engine.task.workload_args import WorkloadArg


class NodeMeasurer:
    """Build and time configs on this node (the body of a Ray actor).

    Parameters
    ----------
    builders : int or None
        Configs built at once (None: this node's cores).
    build_timeout : float
        Seconds one build may take.
    timing : TimingOptions
        How kernels are timed.
    """

    def __init__(self, builders: int | None, build_timeout: float, timing: TimingOptions) -> None:
        self.option = measure_option(LocalBuilder(timeout=build_timeout, n_parallel=builders),
                                     LocalRunner(timing=timing))
        self._task_key: tuple[str, tuple[WorkloadArg, ...], str] | None = None
        self._batch: MeasureBatch | None = None

    def ready(self) -> int:
        """Configs this worker builds at once (answered once the actor runs)."""
        return int(self.option["builder"].n_parallel)

    def measure(self, inputs: Sequence[MeasureInput]) -> list[MeasureResult]:
        """Build and time ``inputs`` (configs of one task); one result per input, in order."""
        task = inputs[0].task
        key = (task.name, task.args, str(task.target))
        if key != self._task_key or self._batch is None:
            self._batch = create_measure_batch(task, self.option)
            self._task_key = key
        return self._batch(list(inputs))

    def close(self) -> None:
        """Stop this worker's processes."""
        self.option["builder"].close()
        self.option["runner"].close()
