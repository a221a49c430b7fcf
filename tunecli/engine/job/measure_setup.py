"""The ``measure`` section of a job turned into TVM's ``measure_option(builder, runner)``."""

from __future__ import annotations

from typing import Any

from tunecli.engine.job.spec import Job
from tunecli.engine.measure import LocalBuilder, LocalRunner, measure_option
from tunecli.engine.rpc.rpc_runner import RPCRunner


def make_measure_option(job: Job) -> dict[str, Any]:
    """Return the ``measure_option`` dict for ``job`` (local or RPC runner).

    Parameters
    ----------
    job : Job

    Returns
    -------
    dict
        ``{"builder": LocalBuilder, "runner": LocalRunner | RPCRunner}``.
    """
    b, r = job.builder, job.runner
    builder = LocalBuilder(timeout=b.timeout, n_parallel=b.n_parallel)
    common = dict(timeout=r.timeout, number=r.number, repeat=r.repeat, min_repeat_ms=r.min_repeat_ms,
                  enable_cpu_cache_flush=r.enable_cpu_cache_flush, warmup_ms=r.warmup_ms,
                  cooldown_interval=r.cooldown_interval)
    if r.kind == "rpc":
        assert r.key is not None and r.tracker is not None  # guaranteed by the schema
        host, port = r.tracker
        runner = RPCRunner(r.key, host, port, priority=r.priority, **common)
    else:
        runner = LocalRunner(check_correctness=r.check_correctness, **common)
    return measure_option(builder=builder, runner=runner)


def close_measure_option(option: dict[str, Any]) -> None:
    """Stop the worker processes of a ``measure_option`` (builders and runners that have any)."""
    for part in (option["builder"], option["runner"]):
        close = getattr(part, "close", None)
        if close is not None:
            close()
