"""``lower(sch, args)``: a Schedule to a PrimFunc (a flat-indexed loop nest).

For a GPU target the loop nest gets TVM's GPU meaning: bound inference relaxes the thread loops
that share a ``shared``/``global`` stage (``bound.shared_thread_vars``), virtual threads are
injected (``virtual_thread``) and barriers are inserted between threads writing and reading
shared memory (``storage_sync``).  CPU lowering is unchanged by all of this.
"""

from __future__ import annotations

from collections.abc import Sequence

from tunecli.engine.ir import stmt as S
from tunecli.engine.ir.simplify import simplify
from tunecli.engine.schedule.schedule import Schedule
from tunecli.engine.schedule.stage import INLINE, Stage
from tunecli.engine.target import Target, as_target
from tunecli.engine.te.operation import ComputeOp
from tunecli.engine.te.tensor import Tensor
from tunecli.errors import LoweringError

from .bound import attach_chain, infer_bounds
from .inline import InlinedBodies, read_stages
from .schedule_ops import NestBuilder
from .storage import Storage
from .storage_sync import insert_shared_sync
from .thread_scope import launch_extents
from .virtual_thread import VTHREADS_ATTR, inject_virtual_threads, vthread_count


def lower(sch: Schedule, args: Sequence[Tensor], name: str = "main", target: Target | str | None = None
          ) -> S.PrimFunc:
    """Lower a schedule to a loop nest.

    Parameters
    ----------
    sch : Schedule
        The schedule.
    args : sequence of Tensor
        Kernel arguments in call order (inputs and outputs).
    name : str
        Function name.
    target : Target or str, optional
        What the kernel is for (default: the current target, else the host); a GPU target
        (keys with ``gpu``) gets the GPU meaning of thread bindings and storage scopes.

    Returns
    -------
    PrimFunc
        Parameters are global Buffers named after ``args``; temporaries are Allocate'd.
    """
    bodies = InlinedBodies(sch)
    stages = [st for st in sch.stages if isinstance(st.op, ComputeOp) and st.attach_type != INLINE]
    for st in sch.stages:
        if st.attach_type == INLINE and st.is_output:
            raise LoweringError(f"lower: output stage {st.name} is inlined")
    for st in stages:
        attach_chain(st)
    _check_consumers(sch, stages, bodies)
    full = {id(sch[o]) for o in sch.outputs}
    full |= {id(sch[t]) for t in args if isinstance(t, Tensor) and sch[t].op is not None
             and not any(id(sch[t]) == id(s) for s in stages if s.attach_type != "root")}
    gpu = as_target(target).is_gpu
    info = infer_bounds(sch, stages, bodies, full, relax_threads=gpu)
    storage = Storage(sch, list(args), info)
    for st in stages:  # name temporaries in producer order
        storage.temp_buffers(st)
    body = simplify(NestBuilder(stages, bodies, info, storage).build())
    attrs = {}
    if gpu:
        attrs[VTHREADS_ATTR] = vthread_count(body)
        body = simplify(inject_virtual_threads(body))
        body = insert_shared_sync(body, launch_extents(body, f"lower {name}"))
    return S.PrimFunc(name, storage.params, body, attrs)


def _inside(consumer: Stage, producer: Stage) -> bool:
    """True when ``consumer``'s nest runs inside ``producer``'s attach scope."""
    chain = attach_chain(producer)
    if not chain:
        return True
    parent, iv = chain[0]
    if consumer is parent:
        return True
    pos = next(n for n, x in enumerate(parent.leaf_iter_vars) if x is iv)
    for st, civ in attach_chain(consumer):
        if st is parent:
            return next(n for n, x in enumerate(parent.leaf_iter_vars) if x is civ) >= pos
    return False


def _check_consumers(sch: Schedule, stages: list[Stage], bodies: InlinedBodies) -> None:
    for c in stages:
        for p in read_stages(bodies.of(c), sch):
            if any(p is s for s in stages) and not _inside(c, p):
                raise LoweringError(f"stage {p.name} is computed inside stage {attach_chain(p)[0][0].name} "
                                    f"but stage {c.name}, which reads it, runs outside that loop")
