"""Scheduling an anchor op together with an injective epilogue (``relu(conv + bias)``).

A fused group is one anchor op (a convolution, a dense layer: the op with a schedule of its own)
followed by injective ops (elementwise, broadcast, layout copies) that end in one *epilogue*
stage.  The anchor's schedule is applied to the group: the stages between the anchor and the
epilogue are inlined into the epilogue, and the epilogue takes the place of the anchor's output
stage (as TVM's ``schedule_conv2d_nchw`` does with ``s.outputs[0]``).
"""

from __future__ import annotations

from collections.abc import Sequence

from tunecli.engine import te
from tunecli.engine.schedule import Schedule, create_schedule
from tunecli.engine.te.operation import ComputeOp, Operation
from tunecli.errors import ScheduleError

INJECTIVE_TAGS = frozenset({"injective", "elemwise", "broadcast"})


def is_injective(op: Operation) -> bool:
    """True for ops tagged elementwise, broadcast or injective (each output reads one input point)."""
    return isinstance(op, ComputeOp) and not INJECTIVE_TAGS.isdisjoint(op.tag.split(","))


def create_group_schedule(outs: Sequence[te.Tensor], epilogue: te.Tensor | None) -> Schedule:
    """The schedule of a group: for ``epilogue`` when there is one, else for the anchor's ``outs``."""
    return create_schedule([epilogue.op] if epilogue is not None else [t.op for t in outs])


def inline_between(s: Schedule, outs: Sequence[te.Tensor], epilogue: te.Tensor) -> list[Operation]:
    """Inline every stage on a path from the anchor's ``outs`` to ``epilogue`` (both excluded).

    Parameters
    ----------
    s : Schedule
        Created for ``epilogue``.
    outs : sequence of te.Tensor
        The anchor op's outputs.
    epilogue : te.Tensor
        An injective stage that reads (maybe through other injective stages) the anchor's outputs.

    Returns
    -------
    list of Operation
        The inlined ops.

    Raises
    ------
    ScheduleError
        When the epilogue does not read the anchor, or a stage on the way is not injective.
    """
    anchors = {id(t.op) for t in outs}
    reaches: dict[int, bool] = {}
    between: list[Operation] = []

    def visit(op: Operation) -> bool:
        if id(op) in anchors:
            return True
        if id(op) not in reaches:
            reaches[id(op)] = False
            found = [visit(t.op) for t in op.input_tensors]
            reaches[id(op)] = any(found)
            if reaches[id(op)] and op is not epilogue.op:
                between.append(op)
        return reaches[id(op)]

    if not is_injective(epilogue.op):
        raise ScheduleError(f"epilogue {epilogue.op.name}: not an injective stage (tag {epilogue.op.tag!r})")
    if not visit(epilogue.op):
        raise ScheduleError(f"epilogue {epilogue.op.name} does not read the outputs of "
                            f"{', '.join(t.op.name for t in outs)}")
    for op in between:
        if not is_injective(op):
            raise ScheduleError(f"stage {op.name} between {outs[0].op.name} and the epilogue "
                                f"{epilogue.op.name} is not injective (tag {op.tag!r})")
        s[op].compute_inline()
    return between


def output_through_epilogue(s: Schedule, outs: Sequence[te.Tensor], epilogue: te.Tensor | None) -> te.Tensor:
    """The stage that writes the result when the anchor's output is a data-movement stage (an
    unpack or a gather of tiles) that an epilogue can read through: with an epilogue, the stages
    between are inlined, the anchor's output too, and the epilogue writes the result; without
    one, the anchor's output does.

    Parameters
    ----------
    s : Schedule
        Created by :func:`create_group_schedule`.
    outs : sequence of te.Tensor
        The anchor op's single output.
    epilogue : te.Tensor or None

    Returns
    -------
    te.Tensor
    """
    (out,) = outs
    if epilogue is None:
        return out
    inline_between(s, outs, epilogue)
    s[out].compute_inline()
    return epilogue


def output_and_accumulator(s: Schedule, out: te.Tensor,
                           epilogue: te.Tensor | None) -> tuple[te.Tensor, te.Tensor]:
    """The stage that writes the result and the stage that accumulates the anchor's reduction.

    Without an epilogue the anchor's output ``out`` writes the result and accumulates in a
    ``cache_write(out, "local")`` stage; with one, the epilogue writes the result and ``out``
    itself becomes the local accumulator (the stages between are inlined).

    Parameters
    ----------
    s : Schedule
    out : te.Tensor
        The anchor's (reduction) output.
    epilogue : te.Tensor or None

    Returns
    -------
    (te.Tensor, te.Tensor)
        ``(output, accumulator)``; schedule the output's loops, then compute the accumulator at
        one of them.
    """
    if epilogue is None:
        return out, s.cache_write(out, "local")
    inline_between(s, [out], epilogue)
    s[out].set_scope("local")
    return epilogue, out
