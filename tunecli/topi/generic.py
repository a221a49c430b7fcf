"""``topi.generic``: the schedules of outputs without a tunable anchor, for the current target."""

from tunecli.engine.graph.topi_schedules import (
    schedule_injective,
    schedule_pool,
    schedule_reduce,
    schedule_softmax,
)

__all__ = ["schedule_injective", "schedule_pool", "schedule_reduce", "schedule_softmax"]
