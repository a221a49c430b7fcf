"""The ``measure`` section of a job turned into TVM's ``measure_option(builder, runner)``."""

from __future__ import annotations

from tunecli.engine.job.runner_kinds import CLUSTERS, RUNNERS
from tunecli.engine.job.spec import Job
from tunecli.engine.measure import LocalBuilder, measure_option
from tunecli.engine.measure.batch import MeasureOption
from tunecli.engine.runtime.cuda import CUDADevice
from tunecli.errors import DeviceError, JobError


def make_measure_option(job: Job) -> MeasureOption:
    """Return the ``measure_option`` dict for ``job``: its builder and a runner of its kind.

    Parameters
    ----------
    job : Job

    Returns
    -------
    dict
        ``{"builder": LocalBuilder, "runner": Runner}``; the runner measures with the job's
        ``TimingOptions``.
    """
    if job.cluster is not None:  # builds and measurements on the cluster's nodes
        cluster = job.cluster
        return CLUSTERS[cluster.kind].make(cluster.address, cluster.resources, job.builder.n_parallel,
                                           job.builder.timeout, job.runner.timing)
    builder = LocalBuilder(timeout=job.builder.timeout, n_parallel=job.builder.n_parallel)
    runner = RUNNERS[job.runner.kind].make(job.runner.timing, job.runner.options)
    return measure_option(builder=builder, runner=runner)


def close_measure_option(option: MeasureOption) -> None:
    """Stop the worker processes of a ``measure_option``'s builder and runner."""
    option["builder"].close()
    option["runner"].close()


def check_local_device(job: Job) -> None:
    """Refuse a job whose local runner would measure GPU kernels on a machine without a GPU.

    Raises
    ------
    JobError
        Naming the job's target, when its runner is ``local``, its target a GPU one and this
        machine has no usable CUDA driver and GPU (before anything is built or measured).
    """
    if job.runner.kind != "local" or job.cluster is not None or not job.target.is_gpu:
        return
    try:
        CUDADevice(0).activate()
    except DeviceError as err:
        raise JobError(f"{job.path}: target {str(job.target)!r}: no CUDA driver/GPU on this machine to "
                       f"measure on ({err}); measure on a GPU server with `runner: {{kind: rpc, key: ..., "
                       "tracker: HOST:PORT}`") from None
