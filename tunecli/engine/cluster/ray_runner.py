"""``RayBuilder`` + ``RayRunner``: a tuner's batches built and timed on the nodes of a Ray cluster.

The pair takes the place of ``LocalBuilder`` + ``LocalRunner`` in ``measure_option``, so the
tuning loop, the task scheduler and the log are the local ones: the driver alone writes the log
(``on_result`` streams each record to it as its chunk comes back).  The builder builds nothing
on the driver: it hands each input on as a :class:`PendingBuild`, and the runner sends the
configs, in chunks of as many as a worker builds at once, to the measuring workers
(:class:`~tunecli.engine.cluster.node_measurer.NodeMeasurer`), which build and time them on
their nodes.

Every config sent out is accounted for, each reported exactly once: measured (or a build or run
error, as locally); when its worker or node dies (or hangs past its chunk's deadline) it is sent
again, once, to another worker, and a second loss is recorded as RUNTIME_DEVICE; a chunk whose
worker raised is recorded as UNKNOWN_ERROR.  When no worker is left, or the head is lost, the
run stops with one :class:`ClusterError` / :class:`ClusterUnreachableError` naming the address:
the log holds every record that came back, and the same command resumes.

The runner offers the cluster's nodes as *lanes* (``concurrent_lanes``, ``lane_option``: see
``tuner.concurrent_rounds``), so the task scheduler measures rounds of different tasks at once,
each on its own node(s); a round whose nodes are lost goes on on the workers other rounds leave
free.
Every chunk's node, task and times are kept (:attr:`RayRunner.chunks`, and logged at DEBUG level).
"""

from __future__ import annotations

import collections
import copy
import logging
import math
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from tunecli.engine.cluster.cluster_errors import ClusterError, ClusterUnreachableError
from tunecli.engine.cluster.connection import RayCluster, Slot
from tunecli.engine.measure.batch import MeasureOption
from tunecli.engine.measure.builder import Builder, BuildResult
from tunecli.engine.measure.result import MeasureErrorNo, MeasureInput, MeasureResult
from tunecli.engine.measure.runner import OnResult, Runner
from tunecli.engine.measure.timing_options import TimingOptions
from tunecli.engine.target import as_target

if TYPE_CHECKING:
    from ray import ObjectRef

    from tunecli.engine.task.task import Task

logger = logging.getLogger("autotvm")

#: Times a config is sent out before a lost worker counts as its error.
MAX_SENDS = 2
#: Seconds a chunk may take beyond its builds' and measurements' timeouts (a worker's start-up).
CHUNK_SLACK = 120.0
#: Seconds between two checks that the head still answers (Ray ends a driver that has not reached
#: it for 60 s; a node's results keep coming meanwhile).
HEAD_CHECK = 5.0
#: Seconds a batch waits before asking again for a worker that other batches hold.
CLAIM_WAIT = 0.05


@dataclass(frozen=True)
class ChunkRecord:
    """One chunk of configs sent to a measuring worker, once it is back (or lost).

    Attributes
    ----------
    task : str
        The task's name and arguments.
    node : str
        The Ray node id of the worker.
    lanes : tuple of str
        The nodes of the batch that sent it (empty: the runner as a whole).
    configs : int
    sent, back : float
        ``time.time()`` when it was sent and when its results (or its loss) came.
    outcome : {"measured", "raised", "lost"}
    """

    task: str
    node: str
    lanes: tuple[str, ...]
    configs: int
    sent: float
    back: float
    outcome: str


@dataclass(frozen=True)
class PendingBuild:
    """A config to be built where it is measured (on a node of the cluster)."""

    index: int


class RayBuilder(Builder):
    """The builder of a Ray cluster: builds happen on the nodes, with the measurements.

    ``n_parallel`` is the configs the cluster's workers build at once, so a tuner proposes
    batches that keep every node busy.
    """

    def __init__(self, runner: RayRunner) -> None:
        self.runner = runner
        super().__init__(timeout=runner.cluster.build_timeout, n_parallel=1)

    @property  # type: ignore[override]
    def n_parallel(self) -> int:
        """Configs the runner's workers build at once (known once it has joined the cluster)."""
        return self.runner.parallelism

    @n_parallel.setter
    def n_parallel(self, _value: int) -> None:
        pass  # decided by the cluster

    def build(self, measure_inputs: Sequence[MeasureInput]) -> list[PendingBuild]:  # type: ignore[override]
        """One :class:`PendingBuild` per input (built on the node that measures it)."""
        return [PendingBuild(i) for i in range(len(measure_inputs))]


class RayRunner(Runner):
    """Build and time configs on the nodes of a Ray cluster whose CPU is the target's.

    Parameters
    ----------
    address : str
        ``auto``, ``ray://HOST:10001`` or ``HOST:6379``.
    resources : dict, optional
        What a measuring worker needs of a node (default ``{"tunecli-cpu-<cpu>": 1}``).
    builders : int, optional
        Configs each worker builds at once (default: its node's cores).
    build_timeout : float
        Seconds one build may take.
    timing : TimingOptions, optional
        How kernels are timed.
    """

    reports_each_result = True
    measures_one_at_a_time = False

    def __init__(self, address: str, resources: dict[str, float] | None = None, builders: int | None = None,
                 build_timeout: float = 10.0, *, timing: TimingOptions | None = None) -> None:
        super().__init__(timing=timing)
        self.cluster = RayCluster(address, resources, builders, build_timeout, self.timing)
        self.n_parallel = None
        #: The nodes this runner's batches go to (empty: every node); see :meth:`lane_option`.
        self.lanes: tuple[str, ...] = ()
        #: Every chunk sent so far, by this runner and its lanes, once back.
        self.chunks: list[ChunkRecord] = []
        self._lanes: dict[tuple[str, ...], MeasureOption] = {}
        self._chunks_lock = threading.Lock()

    @property
    def parallelism(self) -> int:
        """Configs the workers of this runner's lanes (all, without lanes) build at once."""
        return self.cluster.lane_parallelism(self.lanes)

    def set_task(self, task: Task) -> None:
        """Join the cluster (once) and start its measuring workers for ``task``'s target."""
        super().set_task(task)
        self.cluster.connect(as_target(task.target))
        self.n_parallel = self.parallelism
        return None

    def concurrent_lanes(self, task: Task) -> list[str]:
        """The nodes that measure ``task``'s target now, one lane each (joins the cluster once)."""
        self.cluster.connect(as_target(task.target))
        return self.cluster.lanes()

    def lane_option(self, lanes: tuple[str, ...]) -> MeasureOption:
        """A ``measure_option`` whose batches are built and timed on the nodes ``lanes`` (on any free
        worker once those are lost); it shares this runner's cluster and :attr:`chunks`."""
        lanes = tuple(lanes)
        if lanes not in self._lanes:
            view = copy.copy(self)
            view.lanes, view.task = lanes, None
            self._lanes[lanes] = {"builder": RayBuilder(view), "runner": view}
        return self._lanes[lanes]

    def close(self) -> None:
        """Stop the workers and leave the cluster."""
        self.cluster.close()

    def record_chunk(self, record: ChunkRecord) -> None:
        """Keep one chunk's record (:attr:`chunks`) and log it at DEBUG level (as ``extra`` ``chunk``)."""
        with self._chunks_lock:
            self.chunks.append(record)
        logger.debug("Ray chunk of %d config(s) of %s on node %s: %s in %.3f s", record.configs, record.task,
                     record.node[:8], record.outcome, record.back - record.sent, extra={"chunk": record})

    def run(self, measure_inputs: Sequence[MeasureInput],
            build_results: Sequence[BuildResult | MeasureResult | PendingBuild],
            on_result: OnResult | None = None) -> list[MeasureResult]:
        """Build and time each pending input on the cluster (see the module doc); failed builds and
        results already known pass through."""
        results: list[MeasureResult | None] = [None] * len(measure_inputs)
        report = on_result or (lambda index, result: None)
        todo = []
        for index, built in enumerate(build_results):
            if isinstance(built, MeasureResult):
                results[index] = built
                report(index, built)
            else:
                todo.append(index)
        if todo:
            _Dispatch(self, measure_inputs, results, report).run(todo)
        return results

    def chunk_deadline(self, size: int, builders: int) -> float:
        """Seconds a worker may take for ``size`` configs before it is taken for hung."""
        return (math.ceil(size / max(builders, 1)) * self.cluster.build_timeout
                + size * (self.timing.timeout + self.timing.cooldown_interval) + CHUNK_SLACK)


class _Dispatch:
    """One ``run``: chunks out to the workers, results back, lost configs sent again."""

    def __init__(self, runner: RayRunner, inputs: Sequence[MeasureInput], results: list[MeasureResult | None],
                 report: OnResult) -> None:
        self.runner, self.cluster = runner, runner.cluster
        self.ray = runner.cluster._ray
        self.inputs, self.results, self.report = inputs, results, report
        self.sends: collections.Counter[int] = collections.Counter()
        self.pending: collections.deque[int] = collections.deque()
        # ref -> (slot, indices, deadline, time sent)
        self.flying: dict[ObjectRef, tuple[Slot, list[int], float, float]] = {}

    def run(self, todo: list[int]) -> None:
        try:
            self._run(todo)
        finally:
            for slot, *_ in self.flying.values():  # an error: the chunks left are no longer waited for
                self.cluster.release(slot)

    def _run(self, todo: list[int]) -> None:
        self.pending.extend(todo)
        while self.pending or self.flying:
            self._send()
            if not self.flying:
                if not self.cluster.live_slots():
                    raise ClusterError(f"Ray cluster at {self.cluster.address}: no measuring worker is left "
                                       f"(nodes offering {self.cluster.resources} were lost); the log holds "
                                       "every finished measurement: run again to resume")
                time.sleep(CLAIM_WAIT)  # every worker has another batch's chunk
                ready = []
            else:
                try:
                    ready, _ = self.ray.wait(list(self.flying), num_returns=1, timeout=1.0)
                except Exception as err:  # noqa: BLE001 - the driver's link to the cluster broke
                    raise self._lost(err) from None
            if time.monotonic() - self.cluster.head_checked > HEAD_CHECK:
                self._check_head()
            for ref in ready:
                self._collect(ref)
            self._expire()

    def _send(self) -> None:
        while self.pending:
            slot = self.cluster.claim(self.runner.lanes)
            if slot is None:
                return
            chunk = [self.pending.popleft() for _ in range(min(slot.builders, len(self.pending)))]
            for index in chunk:
                self.sends[index] += 1
            try:
                ref = slot.actor.measure.remote([self.inputs[i] for i in chunk])
            except BaseException:
                self.cluster.release(slot)
                raise
            deadline = time.monotonic() + self.runner.chunk_deadline(len(chunk), slot.builders)
            self.flying[ref] = (slot, chunk, deadline, time.time())

    def _collect(self, ref: ObjectRef) -> None:
        slot, chunk, _, sent = self.flying.pop(ref)
        self.cluster.release(slot)
        exceptions = self.ray.exceptions
        try:
            measured = self.ray.get(ref)
        except (exceptions.RayActorError, exceptions.WorkerCrashedError, exceptions.ObjectLostError,
                exceptions.NodeDiedError) as err:
            self._chunk(slot, chunk, sent, "lost")
            self._requeue(slot, chunk, f"the Ray worker on node {slot.node.address} was lost: {_line(err)}")
            return
        except exceptions.RayTaskError as err:
            self._chunk(slot, chunk, sent, "raised")
            for index in chunk:
                self._done(index, MeasureResult.failure(
                    MeasureErrorNo.UNKNOWN_ERROR, f"the Ray worker on node {slot.node.address} raised: "
                    f"{err.cause or err}", 0.0))
            return
        self._chunk(slot, chunk, sent, "measured")
        for index, result in zip(chunk, measured, strict=True):
            self._done(index, result)

    def _chunk(self, slot: Slot, chunk: list[int], sent: float, outcome: str) -> None:
        task = self.inputs[chunk[0]].task
        self.runner.record_chunk(ChunkRecord(f"{task.name}{tuple(task.args)}", slot.node.node_id,
                                             self.runner.lanes, len(chunk), sent, time.time(), outcome))

    def _expire(self) -> None:
        now = time.monotonic()
        for ref, (slot, chunk, deadline, sent) in list(self.flying.items()):
            if now > deadline:
                del self.flying[ref]
                self.cluster.release(slot)
                self._chunk(slot, chunk, sent, "lost")
                self._requeue(slot, chunk, f"the Ray worker on node {slot.node.address} did not answer "
                                           "within its chunk's deadline")

    def _check_head(self) -> None:
        why = self.cluster.lost_head()
        if why:
            raise self._lost(why)

    def _requeue(self, slot: Slot, chunk: list[int], why: str) -> None:
        """Send the configs of a lost worker again (once), record a second loss as an error."""
        self._check_head()  # a worker lost with the head: replacing it would wait on the head
        again = [index for index in chunk if self.sends[index] < MAX_SENDS]
        logger.warning("%s: %d config(s) sent to another worker, %d recorded as errors", why, len(again),
                       len(chunk) - len(again))
        if slot.alive:  # told after the loss: a replacement on a node going too does not start
            try:
                self.cluster.retire(slot)
            except Exception as err:  # noqa: BLE001 - the cluster itself is going
                raise self._lost(err) from None
        self.pending.extendleft(reversed(again))
        for index in chunk:
            if index not in again:
                self._done(index, MeasureResult.failure(MeasureErrorNo.RUNTIME_DEVICE,
                                                        f"{why} (sent {self.sends[index]} times)", 0.0))

    def _done(self, index: int, result: MeasureResult) -> None:
        self.results[index] = result
        self.report(index, result)

    def _lost(self, why: BaseException | str) -> ClusterUnreachableError:
        return ClusterUnreachableError(f"lost the Ray cluster at {self.cluster.address}: {_line(why)}; the "
                                       "log holds every finished measurement: run again to resume")


def _line(err: BaseException | str) -> str:
    text = str(err).strip()
    return text.splitlines()[0] if text else type(err).__name__


def cluster_measure_option(address: str, resources: dict[str, float] | None = None,
                           builders: int | None = None, build_timeout: float = 10.0,
                           timing: TimingOptions | None = None) -> MeasureOption:
    """``measure_option`` whose configs are built and timed on a Ray cluster (see the module doc)."""
    runner = RayRunner(address, resources, builders, build_timeout, timing=timing)
    return {"builder": RayBuilder(runner), "runner": runner}
