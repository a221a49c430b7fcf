"""Schedules of the fused groups without a tunable anchor on a GPU target (TVM's
``schedule_injective`` and a bound schedule for reductions, for ``cuda``).

Every stage but the output and the reductions is inlined.  The output's data-parallel axes are fused into
one loop, split by the threads of a block (the target's ``max_num_threads``, fewer when the output
is smaller) and bound to ``blockIdx.x`` / ``threadIdx.x``; its reduction axes, if any (pools,
sums), run in the thread.  A reduction read by the output (the maximum and the sum of a softmax,
the sum of a global average pool) is computed in each thread, into ``local`` storage, for the
output element the thread writes: one kernel, no grid-wide barrier, every thread independent.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from tunecli.engine import te
from tunecli.engine.lower.verify_gpu import GPULimits
from tunecli.engine.schedule import Schedule, create_schedule
from tunecli.engine.target import Target
from tunecli.engine.te.operation import ComputeOp

from .group_schedule import stages_of


def schedule_group_gpu(outs: Sequence[te.Tensor], target: Target) -> Schedule:
    """Schedule a group without an anchor whose result is ``outs[0]`` for the GPU ``target``."""
    (out,) = outs
    s = create_schedule([out.op])
    if not isinstance(out.op, ComputeOp):
        return s
    reductions = []
    for op in stages_of(out):
        if op is out.op or not isinstance(op, ComputeOp):
            continue
        if not op.reduce_axis:  # injective, or pointwise such as softmax's exp: recomputed where read
            s[op].compute_inline()
        else:
            reductions.append(op)
    axes = list(s[out.op].op.axis)
    if not axes:
        return s
    total = math.prod(int(a.dom.extent) for a in axes)
    threads = min(GPULimits.from_target(target).max_threads_per_block, total)
    fused = s[out.op].fuse(*axes) if len(axes) > 1 else axes[0]
    bx, tx = s[out.op].split(fused, factor=threads)
    s[out.op].bind(bx, te.thread_axis("blockIdx.x"))
    s[out.op].bind(tx, te.thread_axis("threadIdx.x"))
    for op in reductions:  # producers first: each is computed before the stages that read it
        s[op].set_scope("local")
        s[op].compute_at(s[out.op], tx)
    return s
