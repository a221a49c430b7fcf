"""TVM's ``topi.generic`` / ``topi.x86`` schedules of outputs without a tunable anchor
(``schedule_injective``, ``schedule_reduce``, ``schedule_softmax``, ``schedule_pool``): the
schedule a network's fused group of them gets (``group_schedule.schedule_group``), for the current
target (``with tvm.target.Target(...)``), else the host."""

from __future__ import annotations

from collections.abc import Sequence

from tunecli.engine import te
from tunecli.engine.schedule import Schedule
from tunecli.engine.target import Target
from tunecli.errors import GraphError

from .group_schedule import schedule_group


def _schedule(outs: te.Tensor | Sequence[te.Tensor], what: str) -> Schedule:
    tensors = [outs] if isinstance(outs, te.Tensor) else list(outs)
    if len(tensors) != 1 or not isinstance(tensors[0], te.Tensor):
        raise GraphError(f"topi {what}: expected one output tensor, got {outs!r}")
    return schedule_group(tensors, Target.current())


def schedule_injective(outs: te.Tensor | Sequence[te.Tensor]) -> Schedule:
    """A schedule of an elementwise/broadcast/layout output: its producers inlined, its innermost
    axis in vectors, outer loops parallel when there is enough work."""
    return _schedule(outs, "schedule_injective")


def schedule_reduce(outs: te.Tensor | Sequence[te.Tensor]) -> Schedule:
    """A schedule of a reduction's output (``topi.sum``, ``topi.max`` ...)."""
    return _schedule(outs, "schedule_reduce")


def schedule_softmax(outs: te.Tensor | Sequence[te.Tensor]) -> Schedule:
    """A schedule of ``topi.nn.softmax`` / ``log_softmax`` by rows."""
    return _schedule(outs, "schedule_softmax")


def schedule_pool(outs: te.Tensor | Sequence[te.Tensor], layout: str = "NCHW") -> Schedule:
    """A schedule of a pooling output (``topi.nn.pool2d``); ``layout`` is accepted for TVM's signature."""
    del layout
    return _schedule(outs, "schedule_pool")


__all__ = ["schedule_injective", "schedule_pool", "schedule_reduce", "schedule_softmax"]
