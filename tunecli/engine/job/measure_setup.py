"""The ``measure`` section of a job turned into TVM's ``measure_option(builder, runner)``."""

from __future__ import annotations

from typing import Any

from tunecli.engine.job.runner_kinds import RUNNERS
from tunecli.engine.job.spec import Job
from tunecli.engine.measure import LocalBuilder, measure_option


def make_measure_option(job: Job) -> dict[str, Any]:
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
    builder = LocalBuilder(timeout=job.builder.timeout, n_parallel=job.builder.n_parallel)
    runner = RUNNERS[job.runner.kind].make(job.runner.timing, job.runner.options)
    return measure_option(builder=builder, runner=runner)


def close_measure_option(option: dict[str, Any]) -> None:
    """Stop the worker processes of a ``measure_option``'s builder and runner."""
    option["builder"].close()
    option["runner"].close()
