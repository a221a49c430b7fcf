"""rfactor: turn part of a reduction into a data-parallel axis of a new stage (TVM semantics).

After ``ko, ki = s[B].split(k, 16); BF = s.rfactor(B, ki)``, ``BF`` has an extra data axis for
``ki`` (at ``factor_axis``) and reduces over the remaining reduction axes (``ko``); ``B`` then
reduces ``BF`` over a new reduction axis with ``ki``'s extent.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tunecli.engine.ir import expr as E
from tunecli.engine.ir.visitor import substitute
from tunecli.engine.te.operation import ComputeOp
from tunecli.engine.te.reduction import Reduce, is_const_true
from tunecli.engine.te.tensor import COMM_REDUCE, DATA_PAR, IterVar, Range, Tensor, TensorRead, extent_value
from tunecli.errors import ScheduleError

from .cache import _replace_op, check_not_attached_to
from .relations import Fuse, Split
from .stage import Stage

if TYPE_CHECKING:
    from .schedule import Schedule


def _extents(stage: Stage) -> dict[IterVar, int | E.Expr]:
    """Every axis's extent: ints, or expressions where the sizes are symbolic (``te.var``)."""
    ext: dict[IterVar, int | E.Expr] = {iv: extent_value(iv.dom.extent)
                                        for iv in stage.op.axis + stage.op.reduce_axis}
    for rel in stage.relations:
        if isinstance(rel, Split):
            e = ext[rel.parent]
            if isinstance(e, int):
                inner = min(rel.factor, e) if rel.factor is not None else -(-e // rel.nparts)
                ext[rel.inner], ext[rel.outer] = inner, -(-e // inner)
            elif rel.factor is not None:
                ext[rel.inner], ext[rel.outer] = rel.factor, (e + (rel.factor - 1)) // rel.factor
            else:
                ext[rel.inner], ext[rel.outer] = (e + (rel.nparts - 1)) // rel.nparts, rel.nparts
        elif isinstance(rel, Fuse):
            ext[rel.fused] = ext[rel.outer] * ext[rel.inner]
    return ext


def _root_values(stage: Stage, ext: dict[IterVar, int | E.Expr], leaf_vals: dict[IterVar, E.Expr]
                 ) -> dict[IterVar, E.Expr]:
    vals = dict(leaf_vals)
    for rel in reversed(stage.relations):
        if isinstance(rel, Split) and rel.outer in vals and rel.inner in vals:
            vals[rel.parent] = vals[rel.outer] * ext[rel.inner] + vals[rel.inner]
        elif isinstance(rel, Fuse) and rel.fused in vals:
            vals[rel.outer] = vals[rel.fused] // ext[rel.inner]
            vals[rel.inner] = vals[rel.fused] % ext[rel.inner]
    return vals


def rfactor(sch: Schedule, tensor: Tensor, axis: IterVar, factor_axis: int = 0) -> Tensor:
    """Factor the reduction of ``tensor`` over leaf reduction axis ``axis`` into a new stage."""
    stage = sch[tensor]
    op = stage.op
    if not isinstance(op, ComputeOp) or not isinstance(op.body[0], Reduce):
        raise ScheduleError(f"rfactor of {tensor.name}: stage {stage.name} is not a reduction")
    if op.num_outputs > 1:
        raise ScheduleError(f"rfactor of {tensor.name}: a reduction of {op.num_outputs} values (a tuple "
                            "reduction) cannot be factored")
    stage._check_leaf(axis, "rfactor")
    if axis.iter_type != COMM_REDUCE:
        raise ScheduleError(f"rfactor of {tensor.name}: axis {axis.var.name} is not a reduction axis")
    if not 0 <= factor_axis <= len(op.axis):
        raise ScheduleError(f"rfactor of {tensor.name}: factor_axis {factor_axis} out of range "
                            f"[0, {len(op.axis)}]")
    for rel in stage.relations:
        touched = [rel.parent] if isinstance(rel, Split) else [rel.outer, rel.inner]
        if any(iv.iter_type != COMM_REDUCE for iv in touched):
            raise ScheduleError(f"rfactor of {tensor.name}: call rfactor before splitting or fusing the "
                                f"data axes of stage {stage.name}")
    check_not_attached_to(sch, stage, f"rfactor of {tensor.name}")
    ext = _extents(stage)
    red: Reduce = op.body[0]
    # the factored stage: data axes + the factor axis, reducing over the other reduce leaves
    data = [IterVar(Range(0, iv.dom.extent), E.Var(iv.var.name, "int32"), DATA_PAR) for iv in op.axis]
    fax = IterVar(Range(0, ext[axis]), E.Var(axis.var.name, "int32"), DATA_PAR)
    rf_axis = data[:factor_axis] + [fax] + data[factor_axis:]
    rest = [iv for iv in stage.leaf_iter_vars if iv.iter_type == COMM_REDUCE and iv is not axis]
    new_red = [IterVar(Range(0, ext[iv]), E.Var(iv.var.name, "int32"), COMM_REDUCE) for iv in rest]
    leaf_vals: dict[IterVar, E.Expr] = {axis: fax.var}
    leaf_vals.update({old: new.var for old, new in zip(rest, new_red, strict=True)})
    vals = _root_values(stage, ext, leaf_vals)
    vmap: dict[E.Var, E.Expr] = {old.var: new.var for old, new in zip(op.axis, data, strict=True)}
    cond = red.condition
    for iv in op.reduce_axis:
        if iv not in vals:
            raise ScheduleError(f"rfactor of {tensor.name}: cannot express reduction axis {iv.var.name}")
        vmap[iv.var] = iv.dom.min + vals[iv]
        if iv in leaf_vals:
            continue
        cond = cond & (vals[iv] < iv.dom.extent)  # non-dividing splits; dropped when provable
    source = [substitute(s, vmap) for s in red.source]
    body = Reduce(red.combiner, source, new_red if new_red else [], substitute(cond, vmap))
    if not new_red:  # nothing left to reduce: the factored stage is elementwise
        body = (E.Select(body.condition, source[0], red.combiner.identity_element[0])
                if not is_const_true(body.condition) else source[0])
    rf_op = ComputeOp(f"{op.name}.rf", op.tag, op.attrs, rf_axis, [body])
    rf = rf_op.output(0)
    rf_stage = Stage(rf_op, sch)
    sch.register(rf_op, rf_stage)
    sch.stages.insert(sch.stages.index(stage), rf_stage)
    # the original stage reduces the factored tensor over the factor axis
    out_axis = [IterVar(Range(0, iv.dom.extent), E.Var(iv.var.name, "int32"), DATA_PAR) for iv in op.axis]
    kv = IterVar(Range(0, ext[axis]), E.Var(axis.var.name + ".v", "int32"), COMM_REDUCE)
    idx = [iv.var for iv in out_axis]
    idx.insert(factor_axis, kv.var)
    final = Reduce(red.combiner, [TensorRead(rf, tuple(idx))], [kv], E.IntImm(1, "bool"))
    new_op = ComputeOp(op.name, op.tag, op.attrs, out_axis, [final])
    stage.relations = []
    stage.iter_var_attrs = {}
    stage.all_iter_vars = out_axis + [kv]
    stage.leaf_iter_vars = out_axis + [kv]
    _replace_op(sch, stage, new_op)
    return rf
