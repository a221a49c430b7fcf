"""TVM's ``te.schedule.AutoInlineElemWise`` / ``AutoInlineBroadcast`` / ``AutoInlineInjective``:
every stage not yet scheduled, not an output and of the kind named inlined into its consumers.

Elementwise: each tensor read at exactly the operation's axes, in order.  Broadcast: each read
at some of them, in order (a bias read at the channel).  Injective: no reduction (every output
element reads a fixed point of each input)."""

from __future__ import annotations

from collections.abc import Callable

from tunecli.engine.ir import expr as E
from tunecli.engine.te.operation import ComputeOp, Operation, tensor_reads
from tunecli.engine.te.reduction import Reduce

from .schedule import Schedule
from .stage import ROOT, Stage


def _reads_axes(op: Operation, all_axes: bool) -> bool:
    if not isinstance(op, ComputeOp) or any(isinstance(b, Reduce) for b in op.body):
        return False
    axes = [iv.var for iv in op.axis]
    for read in tensor_reads(op.body):
        if not all(isinstance(i, E.Var) for i in read.indices):
            return False
        positions = [next((n for n, v in enumerate(axes) if v is i), -1) for i in read.indices]
        if -1 in positions or positions != sorted(set(positions)):
            return False
        if all_axes and len(positions) != len(axes):
            return False
    return True


def is_elemwise(op: Operation) -> bool:
    """Every read is at exactly the operation's axes, in order."""
    return _reads_axes(op, all_axes=True)


def is_broadcast(op: Operation) -> bool:
    """Every read is at some of the operation's axes, in order."""
    return _reads_axes(op, all_axes=False)


def is_injective_op(op: Operation) -> bool:
    """A computed operation without a reduction."""
    return isinstance(op, ComputeOp) and not any(isinstance(b, Reduce) for b in op.body)


def _unscheduled(stage: Stage) -> bool:
    """No loop primitive, placement or group applied to it, and no stage placed at its loops."""
    return (not stage.relations and stage.attach_type == ROOT and not stage.iter_var_attrs
            and not stage.bindings and stage.group is None
            and all(other.attach_stage is not stage for other in stage.schedule.stages))


def _auto_inline(sch: Schedule, kind: Callable[[Operation], bool]) -> None:
    for stage in sch.stages:
        if (stage.op is not None and not stage.is_output and stage.op.num_outputs == 1
                and _unscheduled(stage) and kind(stage.op)):
            stage.compute_inline()


def auto_inline_elemwise(sch: Schedule) -> None:
    """Inline every unscheduled, non-output elementwise stage (TVM's ``AutoInlineElemWise``)."""
    _auto_inline(sch, is_elemwise)


def auto_inline_broadcast(sch: Schedule) -> None:
    """Inline every unscheduled, non-output broadcast stage (TVM's ``AutoInlineBroadcast``)."""
    _auto_inline(sch, is_broadcast)


def auto_inline_injective(sch: Schedule) -> None:
    """Inline every unscheduled, non-output stage without a reduction (TVM's ``AutoInlineInjective``)."""
    _auto_inline(sch, is_injective_op)


__all__ = ["auto_inline_broadcast", "auto_inline_elemwise", "auto_inline_injective", "is_broadcast",
           "is_elemwise", "is_injective_op"]
