"""Where ``apply`` runs a job's tuned kernels: where the job's runner measured them.

A job whose target runs on this machine runs its kernels in a local measurement worker (which
may preload more modules, e.g. what times the numpy baseline); a job
measured through RPC (``measure.runner.kind: rpc``) for a target this machine cannot run (an
ARM board) runs them on a device of its key, through one session for the whole apply; any
other job only builds (and exports) its kernels.  A model job's builds for such a device are
shipped and run there in one session (:func:`run_on_job_device`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from tunecli.engine.job.spec import Job
from tunecli.engine.measure.timing import MEASURE_FUNC, MeasureReply, MeasureRequest, measure_in_worker
from tunecli.engine.measure.worker import Worker
from tunecli.engine.rpc.device_session import request_device
from tunecli.engine.rpc.remote import RemoteSession
from tunecli.engine.rpc.remote_network import RemoteRun, run_on_device
from tunecli.engine.runtime.graph_library import CompiledGraph
from tunecli.engine.target import Target
from tunecli.errors import RPCError

#: Seconds an apply waits in the tracker's queue for a device of the job's key.
DEVICE_WAIT = 60.0


@dataclass
class ApplyDevice:
    """Runs kernels for ``apply``.

    Attributes
    ----------
    where : str
        What runs them: ``"this machine"`` or the RPC device's description.
    worker : Worker or None
        The local measurement worker (None on an RPC device).
    measure : callable
        ``measure(request) -> MeasureReply``.
    close : callable
        Releases the worker or the session.
    """

    where: str
    worker: Worker | None
    measure: Callable[[MeasureRequest], MeasureReply]
    close: Callable[[], None]


def open_apply_device(job: Job, target: Target, preload: Sequence[str] = ()) -> ApplyDevice | None:
    """The device that runs ``job``'s kernels built for ``target``; None when none can.

    ``preload``: modules a local worker imports at start, besides the measurement's.

    Raises
    ------
    RPCError
        When the job measures through RPC and no device of its key can be had.
    TargetError
        When the device of the job's key cannot run ``target``.
    """
    if target.is_host:
        worker = Worker(preload=(MEASURE_FUNC.partition(":")[0], *preload), name="tunecli-apply")
        worker.start()  # warms up while the first kernel builds
        return ApplyDevice("this machine", worker, lambda request: measure_in_worker(worker, request),
                           worker.close)
    session = open_device_session(job, target)
    if session is None:
        return None
    info = session.describe()
    return ApplyDevice(f"{info.describe()} at {session.addr[0]}:{session.addr[1]}", None, session.measure,
                       session.close)


def open_device_session(job: Job, target: Target) -> RemoteSession | None:
    """A session with a device of the job's RPC key that can run ``target``; None when the job
    measures no RPC device.

    Raises
    ------
    RPCError
        When no device of the job's key can be had.
    TargetError
        When the device of the job's key cannot run ``target``.
    """
    if job.runner.kind != "rpc":
        return None
    options = job.runner.options
    host, port = options["tracker"]
    return request_device(host, port, options["key"], target, options.get("priority", 1),
                          wait_timeout=DEVICE_WAIT, where="apply")


@dataclass(frozen=True)
class DeviceRuns:
    """Builds of a network run on the job's device (:func:`run_on_job_device`).

    Attributes
    ----------
    device : str
        The device's description and address ("" when none measures the job).
    runs : dict of str to RemoteRun
        Each build that ran, by name, in the order given.
    error : str or None
        Why the first build failed, or why nothing ran; the builds after it were not run.
    """

    device: str
    runs: dict[str, RemoteRun] = field(default_factory=dict)
    error: str | None = None


def run_on_job_device(job: Job, builds: Mapping[str, CompiledGraph], inputs: Mapping[str, np.ndarray]
                      ) -> DeviceRuns:
    """Ship each build (a ``.tar`` the device loads) to a device of the job's RPC key, run it on
    ``inputs`` and time it with the job's timing settings, in one session.

    Raises
    ------
    RPCError
        When no device of the job's key can be had.
    TargetError
        When the device cannot run the builds' target.
    """
    target = next(iter(builds.values())).target
    session = open_device_session(job, target)
    if session is None:
        return DeviceRuns("", error=f"{target} does not run on this machine and the job measures no RPC "
                                    "device: the network was built, not run")
    timing = job.runner.timing
    runs: dict[str, RemoteRun] = {}
    try:
        info = session.describe()
        device = f"{info.describe()} at {session.addr[0]}:{session.addr[1]}"
        for name, lib in builds.items():
            try:
                runs[name] = run_on_device(session, lib, inputs, number=timing.number, repeat=timing.repeat,
                                           min_repeat_ms=timing.min_repeat_ms, name=f"{name}.tar")
            except RPCError as err:
                return DeviceRuns(device, runs, f"the {name} network failed on {device}: {err}")
    finally:
        session.close()
    return DeviceRuns(device, runs)
