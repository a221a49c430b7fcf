"""A connection to a Ray cluster and the measuring workers it holds there, one per slot.

``RayCluster.connect(target)`` checks the head is reachable, joins the cluster (``ray.init``),
finds the alive nodes that offer the job's resources (``{"tunecli-cpu-znver4": 1}`` by default:
a custom resource each node of that CPU advertises with ``ray start --resources``), runs a tiny
task on each (:func:`tunecli.engine.cluster.node_info.describe_node`) and refuses, before
anything is measured, nodes whose tunecli, llvmlite or Python differ from the driver's.  A node
whose CPU is not the target's is never used for timing, whatever it advertises.  On every
other node it starts measuring workers (:class:`NodeMeasurer` actors), as many as the node
offers the resources for, each pinned to its node.

Several batches may be measured at once (the rounds of different tasks, each on its node: a
*lane*): a worker takes one chunk at a time, claimed (:meth:`RayCluster.claim`) by the batch that
sends it and released when the chunk is back.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from dataclasses import dataclass
from types import ModuleType
from typing import TYPE_CHECKING

from tunecli.engine.cluster.cluster_errors import ClusterError, ClusterUnreachableError, ClusterVersionError
from tunecli.engine.cluster.head_address import (
    CONNECT_TIMEOUT,
    PORT_HINT,
    check_address,
    head_of,
    head_reachable,
    head_silent,
)
from tunecli.engine.cluster.node_info import (
    NodeInfo,
    default_resource,
    describe_node,
    software_versions,
    unlike_nodes,
    version_problems,
    wanted_cpu,
)
from tunecli.engine.cluster.node_measurer import NodeMeasurer
from tunecli.engine.cluster.ray_import import import_ray, keep_sigterm
from tunecli.engine.measure.timing_options import TimingOptions
from tunecli.engine.rpc.sockets import parse_host_port
from tunecli.engine.target import Target

if TYPE_CHECKING:
    from ray.actor import ActorHandle
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

logger = logging.getLogger("autotvm")

#: Seconds a node may take to answer the first task, or a measuring worker to start.
START_TIMEOUT = 120.0
#: Seconds of waiting for measuring workers to start before a warning says which are waited for.
WAIT_NOTICE = 10.0
#: Seconds a replacement for a lost worker may take to start (its node may be going too).
REPLACE_TIMEOUT = 30.0
@dataclass
class Slot:
    """One measuring worker: its actor, its node, how many configs it builds at once."""

    actor: ActorHandle
    node: NodeInfo
    builders: int
    alive: bool = True


class RayCluster:
    """The driver's side of a Ray cluster that builds and times configs of one target.

    Parameters
    ----------
    address : str
        ``auto``, ``ray://HOST:PORT`` or ``HOST:PORT`` (see :func:`check_address`).
    resources : dict, optional
        What one measuring worker needs of a node; default ``{"tunecli-cpu-<cpu>": 1}``.
    builders : int, optional
        Configs each worker builds at once; default the node's cores.
    build_timeout : float
        Seconds one build may take.
    timing : TimingOptions
        How the workers time kernels.
    versions : tuple of (name, version), optional
        The software every node must run (default: this process's, ``node_info.software_versions``).
    """

    def __init__(self, address: str, resources: dict[str, float] | None = None, builders: int | None = None,
                 build_timeout: float = 10.0, timing: TimingOptions | None = None,
                 versions: tuple[tuple[str, str], ...] | None = None) -> None:
        self.address = check_address(address)
        self.resources = dict(resources or {})
        self.builders = builders
        self.build_timeout = build_timeout
        self.timing = timing or TimingOptions()
        self.versions = versions or software_versions()
        self.slots: list[Slot] = []
        self.target: Target | None = None
        self._ray: ModuleType | None = None
        self._owns_ray = False
        self.lost = False  #: the head was found unreachable: nothing more is asked of the cluster
        self.head_checked = time.monotonic()  #: when :meth:`lost_head` last asked
        self._head = head_of(address)
        self._lock = threading.RLock()
        self._busy: set[int] = set()  # id() of the slots with a chunk in flight

    # ------------------------------------------------------------------ connecting
    def connect(self, target: Target) -> None:
        """Join the cluster and start the measuring workers for ``target`` (once).

        Raises
        ------
        ClusterUnreachableError
            The head cannot be reached.
        ClusterVersionError
            A node runs other versions of tunecli, llvmlite or Python than this process.
        ClusterError
            No node offers the resources with the target's CPU, or none starts a worker.
        """
        if self.target is not None:
            if wanted_cpu(target) != wanted_cpu(self.target):
                raise ClusterError(f"Ray cluster at {self.address}: its workers time "
                                   f"{wanted_cpu(self.target)} kernels, not {str(target)!r}")
            return
        self._ray = ray = import_ray()
        self.resources = self.resources or {default_resource(target): 1.0}
        self._join(ray)
        try:
            nodes = self._check_nodes(ray, target, self._candidates(ray))
            self._start_workers(ray, nodes)
        except BaseException:
            self.close()
            raise
        self.target = target

    def _join(self, ray: ModuleType) -> None:
        if self._head is not None:
            why = head_reachable(self._head)
            if why:
                raise ClusterUnreachableError(f"the head of the Ray cluster at {self.address} cannot be "
                                              f"reached: {why}")
            if head_silent(self._head, CONNECT_TIMEOUT):
                raise ClusterUnreachableError(
                    f"{self.address} accepts connections but does not answer as a Ray head (nothing back "
                    f"within {CONNECT_TIMEOUT:g} s): {PORT_HINT}")
        if ray.is_initialized():
            return
        try:
            with keep_sigterm():
                ray.init(address=self.address, logging_level=logging.ERROR, log_to_driver=False,
                         namespace="tunecli")
        except (ConnectionError, TimeoutError, RuntimeError) as err:
            hint = f" ({PORT_HINT})" if self._head is not None else ""
            raise ClusterUnreachableError(f"cannot join the Ray cluster at {self.address}: "
                                          f"{_first_line(err)}{hint}") from None
        self._owns_ray = True
        if self._head is None:  # auto: the head's GCS address, to tell later whether it is lost
            try:
                self._head = parse_host_port(ray.get_runtime_context().gcs_address)
            except (AttributeError, ValueError):
                self._head = None

    def _candidates(self, ray: ModuleType) -> list[tuple[str, int]]:
        """``(node id, workers it can hold)`` of every alive node offering the resources."""
        found = []
        for node in ray.nodes():
            have = node.get("Resources", {})
            if not node.get("Alive") or not all(have.get(k, 0) >= v for k, v in self.resources.items()):
                continue
            found.append((node["NodeID"], int(min(math.floor(have[k] / v) if v else 1
                                                  for k, v in self.resources.items()))))
        if not found:
            raise ClusterError(f"no node of the Ray cluster at {self.address} offers {self.resources}: start "
                               f"its nodes with `ray start ... --resources '{_json(self.resources)}'`")
        return found

    def _check_nodes(self, ray: ModuleType, target: Target, candidates: list[tuple[str, int]]
                     ) -> list[tuple[NodeInfo, int]]:
        """The candidates that answer, after refusing other software and skipping other CPUs."""
        describe = ray.remote(describe_node)
        refs = [describe.options(num_cpus=0, scheduling_strategy=_on_node(ray, node_id)).remote()
                for node_id, _ in candidates]
        infos: list[tuple[NodeInfo, int]] = []
        for ref, (node_id, count) in zip(refs, candidates, strict=True):
            try:
                infos.append((ray.get(ref, timeout=START_TIMEOUT), count))
            except ray.exceptions.RayTaskError as err:  # tunecli cannot even be imported there
                raise ClusterVersionError(f"Ray cluster at {self.address}: node {node_id[:8]} cannot run "
                                          f"tunecli: {_first_line(err.cause or err)}") from None
            except (ray.exceptions.GetTimeoutError, ray.exceptions.RayError) as err:  # a node going away
                logger.warning("Ray node %s did not answer (%s); it is not used", node_id[:8],
                               _first_line(err))
        problems = version_problems([info for info, _ in infos], self.versions)
        if problems:
            raise ClusterVersionError(f"Ray cluster at {self.address}: nodes run other versions than this "
                                      "driver (install the same tunecli and llvmlite everywhere):\n  "
                                      + "\n  ".join(problems))
        cpu = wanted_cpu(target)
        matching = [(info, count) for info, count in infos if info.cpu == cpu]
        for info, _ in infos:
            if info.cpu != cpu:
                logger.warning("Ray node %s offers %s but its CPU is %s, not %s: it is not used",
                               info.address, self.resources, info.cpu, cpu)
        if not matching:
            raise ClusterError(f"Ray cluster at {self.address}: no node offering {self.resources} has the "
                               f"target's CPU {cpu}")
        unlike = unlike_nodes([info for info, _ in matching], target)
        for info, _ in matching:
            if info.node_id in unlike:
                logger.warning("Ray node %s times kernels with %s: it is not used (its timings would not "
                               "compare with the other nodes'; give such nodes a resource of their own and "
                               "tune on them apart)", info.address, unlike[info.node_id])
        return [(info, count) for info, count in matching if info.node_id not in unlike]

    def _start_workers(self, ray: ModuleType, nodes: list[tuple[NodeInfo, int]]) -> None:
        launched = [(info, self._launch(ray, info)) for info, count in nodes for _ in range(count)]
        self._await_workers(ray, launched, START_TIMEOUT)
        if not self.slots:
            raise ClusterError(f"Ray cluster at {self.address}: no measuring worker started within "
                               f"{START_TIMEOUT:g} s (is another tune holding {self.resources}?)")

    def _launch(self, ray: ModuleType, info: NodeInfo) -> ActorHandle:
        """A measuring worker asked for on ``info``'s node (it starts once the node has its resources)."""
        actor = ray.remote(NodeMeasurer).options(num_cpus=0, resources=self.resources, max_restarts=0,
                                                 scheduling_strategy=_on_node(ray, info.node_id))
        return actor.remote(self.builders, self.build_timeout, self.timing)

    def _await_workers(self, ray: ModuleType, launched: list[tuple[NodeInfo, ActorHandle]],
                       timeout: float) -> None:
        """Keep the workers of ``launched`` that start within ``timeout`` seconds (all waited for at once;
        a warning after :data:`WAIT_NOTICE` seconds says which are still waited for), kill the others."""
        refs = {actor.ready.remote(): (info, actor) for info, actor in launched}
        end = time.monotonic() + timeout
        try:
            _, waiting = ray.wait(list(refs), num_returns=len(refs), timeout=min(WAIT_NOTICE, timeout))
            if waiting:
                nodes = ", ".join(sorted({refs[ref][0].address for ref in waiting}))
                logger.warning("waiting up to %g s for %d measuring worker(s) on Ray node(s) %s: still "
                               "starting, or their %s is held by other work on the cluster (another tune?)",
                               timeout, len(waiting), nodes, self.resources)
                left = max(0.0, end - time.monotonic())
                _, waiting = ray.wait(waiting, num_returns=len(waiting), timeout=left)
        except BaseException:  # interrupted: no worker is left to start later and hold its node
            for _, actor in launched:
                ray.kill(actor)
            raise
        for ref, (info, actor) in refs.items():
            try:
                if ref in waiting:
                    raise ray.exceptions.GetTimeoutError(f"not started within {timeout:g} s")
                self.slots.append(Slot(actor, info, ray.get(ref)))
            except ray.exceptions.RayError as err:  # died, timed out, or its node is gone
                logger.warning("no measuring worker started on Ray node %s: %s", info.address,
                               _first_line(err))
                ray.kill(actor)

    # ------------------------------------------------------------------ running
    @property
    def parallelism(self) -> int:
        """Configs the alive workers build at once (at least 1)."""
        return max(1, sum(s.builders for s in self.slots if s.alive))

    def live_slots(self) -> list[Slot]:
        """The workers not known to be dead."""
        return [s for s in self.slots if s.alive]

    def lanes(self) -> list[str]:
        """The node ids with a live worker, in the order their workers started (one lane each)."""
        return list(dict.fromkeys(s.node.node_id for s in self.live_slots()))

    def lane_slots(self, lanes: tuple[str, ...] = ()) -> list[Slot]:
        """The live workers of the nodes ``lanes``; every live worker when those have none left (or
        without lanes)."""
        live = self.live_slots()
        own = [s for s in live if s.node.node_id in lanes]
        return own or live

    def lane_parallelism(self, lanes: tuple[str, ...] = ()) -> int:
        """Configs the workers of :meth:`lane_slots` build at once (at least 1)."""
        return max(1, sum(s.builders for s in self.lane_slots(lanes)))

    def claim(self, lanes: tuple[str, ...] = ()) -> Slot | None:
        """A worker of :meth:`lane_slots` without a chunk in flight, now claimed (None: all busy)."""
        with self._lock:
            for slot in self.lane_slots(lanes):
                if id(slot) not in self._busy:
                    self._busy.add(id(slot))
                    return slot
        return None

    def release(self, slot: Slot) -> None:
        """The chunk of a claimed worker is back (or lost): it may take another."""
        with self._lock:
            self._busy.discard(id(slot))

    def retire(self, slot: Slot) -> None:
        """Forget a dead or hung worker (killed) and start a new one on its node if that node lives."""
        with self._lock:
            if not slot.alive:
                return
            slot.alive = False
        self._ray.kill(slot.actor)
        alive = {n["NodeID"] for n in self._ray.nodes() if n.get("Alive")}
        if slot.node.node_id in alive:
            self._await_workers(self._ray, [(slot.node, self._launch(self._ray, slot.node))], REPLACE_TIMEOUT)

    def lost_head(self) -> str:
        """"" while the head answers, else why it is taken for lost (then :attr:`lost` is set: calls
        that need the head would block until Ray ends the process)."""
        why = head_reachable(self._head, 5.0) if self._head is not None else ""
        self.head_checked = time.monotonic()
        self.lost = self.lost or bool(why)
        return why

    def close(self) -> None:
        """Stop the workers and leave the cluster (when this object joined it)."""
        ray, self._ray = self._ray, None
        if ray is None:
            return
        for slot in self.slots if not self.lost else ():
            try:
                ray.kill(slot.actor)
            except Exception:  # noqa: BLE001 - a worker of a lost cluster cannot be killed
                pass
        self.slots = []
        self.target = None
        if self._owns_ray:
            ray.shutdown()
            self._owns_ray = False


def _on_node(ray: ModuleType, node_id: str) -> NodeAffinitySchedulingStrategy:
    """A scheduling strategy that runs only on ``node_id``."""
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    return NodeAffinitySchedulingStrategy(node_id, soft=False)


def _first_line(err: BaseException) -> str:
    text = str(err).strip()
    return text.splitlines()[0] if text else type(err).__name__


def _json(resources: dict[str, float]) -> str:
    return "{" + ", ".join(f'"{k}": {v:g}' for k, v in resources.items()) + "}"
