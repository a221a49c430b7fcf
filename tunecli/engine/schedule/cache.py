"""cache_read and cache_write: stages that copy a tensor through a buffer of another scope."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from tunecli.engine.ir.expr import Var
from tunecli.engine.ir.visitor import Mutator, substitute
from tunecli.engine.te.operation import ComputeOp, Operation
from tunecli.engine.te.reduction import Reduce
from tunecli.engine.te.tensor import DATA_PAR, IterVar, Range, Tensor, TensorRead
from tunecli.errors import ScheduleError

from .stage import ROOT, Stage

if TYPE_CHECKING:
    from .schedule import Schedule

SCOPES = ("global", "local", "shared")


def _check_scope(scope: str, what: str) -> None:
    if scope not in SCOPES:
        raise ScheduleError(f"{what}: unknown storage scope {scope!r}; use one of {SCOPES}")


def _copy_axis(axis: list[IterVar], suffix: str) -> list[IterVar]:
    return [IterVar(Range(iv.dom.min, iv.dom.extent), Var(iv.var.name + suffix, "int32"), DATA_PAR)
            for iv in axis]


def _insert_stage(sch: Schedule, stage: Stage, before: Stage | None = None,
                  after: Stage | None = None) -> None:
    if before is not None:
        sch.stages.insert(sch.stages.index(before), stage)
    else:
        sch.stages.insert(sch.stages.index(after) + 1, stage)


def cache_read(sch: Schedule, tensor: Tensor, scope: str,
               readers: Stage | Operation | Tensor | Sequence[Stage | Operation | Tensor]) -> Tensor:
    """Create a stage copying ``tensor`` into ``scope``; ``readers`` then read the copy."""
    _check_scope(scope, f"cache_read of {tensor.name}")
    src_stage = sch[tensor]
    reader_list = readers if isinstance(readers, (list, tuple)) else [readers]
    reader_stages = [sch[r.op if isinstance(r, Tensor) else r] for r in reader_list]
    if not reader_stages:
        raise ScheduleError(f"cache_read of {tensor.name}: no readers given")
    current = src_stage.op.output(tensor.value_index)
    for r in reader_stages:
        if all(sch[t] is not src_stage for t in r.op.input_tensors):
            raise ScheduleError(f"cache_read of {tensor.name}: stage {r.name} does not read it")
    if isinstance(current.op, ComputeOp):
        axis = _copy_axis(current.op.axis, "")
    else:
        axis = [IterVar(Range(0, n), _var(f"ax{d}"), DATA_PAR) for d, n in enumerate(current.shape)]
    cache_op = ComputeOp(f"{tensor.name}.{scope}", "", None, axis,
                         [TensorRead(current, tuple(iv.var for iv in axis))])
    cache = cache_op.output(0)
    cache_stage = Stage(cache_op, sch)
    cache_stage.scope = scope
    sch.register(cache_op, cache_stage)
    _insert_stage(sch, cache_stage, after=src_stage)

    class _Redirect(Mutator):
        def visit_TensorRead(self, node: TensorRead) -> TensorRead:
            node = self.generic_visit(node)
            if sch[node.tensor] is src_stage and node.tensor.value_index == tensor.value_index:
                return TensorRead(cache, node.indices)
            return node

    for r in reader_stages:
        old = r.op
        new_body = [_Redirect().visit(b) for b in old.body]
        new_op = ComputeOp(old.name, old.tag, old.attrs, old.axis, new_body)
        _replace_op(sch, r, new_op)
    return cache


def _var(name: str) -> Var:
    return Var(name, "int32")


def _replace_op(sch: Schedule, stage: Stage, new_op: Operation) -> None:
    stage.op = new_op
    sch.register(new_op, stage)  # sch.outputs keeps the original ops (as TVM); s[old_op] still works


def check_not_attached_to(sch: Schedule, stage: Stage, what: str) -> None:
    """Raise ScheduleError when another stage (or group) is computed at ``stage``'s loops."""
    for other in list(sch.stages) + list(sch.groups):
        if other.attach_stage is stage:
            raise ScheduleError(f"{what}: stage {other.name} is computed at stage {stage.name}; call this "
                                "primitive before compute_at")


def cache_write(sch: Schedule, tensor: Tensor, scope: str) -> Tensor:
    """Compute ``tensor`` into a new ``scope`` stage; the original stage becomes a copy of it (of
    every output, for an operation of several: the cache of ``tensor``'s is returned)."""
    _check_scope(scope, f"cache_write of {tensor.name}")
    stage = sch[tensor]
    op = stage.op
    if not isinstance(op, ComputeOp):
        raise ScheduleError(f"cache_write of {tensor.name}: only computed tensors can be cached")
    if stage.relations or stage.attach_type != ROOT or stage.iter_var_attrs or stage.bindings:
        raise ScheduleError(f"cache_write of {tensor.name}: stage {stage.name} was already scheduled; call "
                            "cache_write before split/reorder/compute_at on it")
    check_not_attached_to(sch, stage, f"cache_write of {tensor.name}")
    cache_axis = _copy_axis(op.axis, ".c")
    vmap = {old.var: new.var for old, new in zip(op.axis, cache_axis, strict=True)}
    body = [substitute(b, vmap) for b in op.body]
    cache_op = ComputeOp(f"{op.name}.{scope}", op.tag, op.attrs, cache_axis, body)
    cache = cache_op.output(tensor.value_index)
    cache_stage = Stage(cache_op, sch)
    cache_stage.scope = scope
    sch.register(cache_op, cache_stage)
    _insert_stage(sch, cache_stage, before=stage)
    # As TVM: the copy op reuses the original op's axis IterVars, so ``C.op.axis`` (the user's
    # old handle) still names the axes of ``s[C]``; the reduce axes now belong to the cache op.
    out_axis = list(op.axis)
    copy_op = ComputeOp(op.name, op.tag, op.attrs, out_axis,
                        [TensorRead(cache_op.output(i), tuple(iv.var for iv in out_axis))
                         for i in range(op.num_outputs)])
    stage.all_iter_vars = list(out_axis)
    stage.leaf_iter_vars = list(out_axis)
    _replace_op(sch, stage, copy_op)
    assert not isinstance(copy_op.body[0], Reduce)
    return cache
