"""``topi.x86``: the CPU schedules of outputs without a tunable anchor (those of ``topi.generic``)."""

from tunecli.engine.graph.topi_schedules import (
    schedule_injective,
    schedule_pool,
    schedule_reduce,
    schedule_softmax,
)

__all__ = ["schedule_injective", "schedule_pool", "schedule_reduce", "schedule_softmax"]
