"""Bound inference: the range of every loop of every stage.

Stages are visited consumers first.  A producer's region is the union of what its consumers
read, with the consumer loops *inside* the producer's attach point relaxed over their ranges and
the loops at or outside it kept symbolic; so a stage computed at ``jo`` covers
``[jo*32, jo*32 + 31]``.  Regions are clamped to the producer's own domain.  Loop ranges then
flow down through split/fuse relations; root values flow up from the loop variables.

For a GPU target (``relax_threads``) the loops bound to threads that share the producer's
storage are relaxed too, as TVM's InferBound does: a ``shared`` stage computed inside a
``threadIdx``/``vthread`` loop covers what every thread of the block reads (the threads fetch
it together), a ``global`` one also what every block reads; a ``local`` stage stays per thread.
"""

from __future__ import annotations

from collections.abc import Hashable

from tunecli.engine.ir import expr as E
from tunecli.engine.ir.interval import const_bounds, eval_interval
from tunecli.engine.ir.simplify import int_bounds, simplify, skey
from tunecli.engine.ir.visitor import post_order, substitute
from tunecli.engine.schedule.relations import Fuse, Split
from tunecli.engine.schedule.schedule import Schedule
from tunecli.engine.schedule.stage import SCOPE, Stage
from tunecli.engine.te.tensor import COMM_REDUCE, DATA_PAR, IterVar
from tunecli.errors import LoweringError

from .inline import InlinedBodies, reads_of
from .thread_scope import thread_rank

Rng = tuple[E.Expr, E.Expr]  # (min, extent)


def attach_of(stage: Stage) -> tuple[Stage, IterVar] | None:
    """The (stage, axis) this stage is computed in, following groups; None at the root."""
    if stage.attach_type == SCOPE:
        return stage.attach_stage, stage.attach_ivar
    g = stage.group
    while g is not None:
        if g.attach_type == SCOPE:
            return g.attach_stage, g.attach_ivar
        g = g.group
    return None


def attach_chain(stage: Stage) -> list[tuple[Stage, IterVar]]:
    """Attach points from the innermost outwards."""
    chain = []
    a = attach_of(stage)
    while a is not None:
        if len(chain) > 1000 or any(a[0] is c[0] for c in chain):
            raise LoweringError(f"stage {stage.name}: cyclic compute_at")
        if all(iv is not a[1] for iv in a[0].leaf_iter_vars):
            raise LoweringError(f"stage {stage.name} is computed at axis {a[1].var.name} of stage "
                                f"{a[0].name}, which is no longer one of its loops (it was split or fused)")
        chain.append(a)
        a = attach_of(a[0])
    return chain


def scope_vars(stage: Stage) -> set[E.Var]:
    """Loop variables enclosing ``stage``'s loop nest."""
    out: set[E.Var] = set()
    for parent, iv in attach_chain(stage):
        leaves = parent.leaf_iter_vars
        pos = next(n for n, x in enumerate(leaves) if x is iv)
        out.update(x.var for x in leaves[:pos + 1])
    return out


# TVM's storage ranks (global 0, shared 1, local 3); a loop bound to a thread axis of rank >= the
# scope's rank (``thread_rank``) runs in threads that share the storage, so the storage must
# cover all of its iterations.
_SCOPE_RANK = {"global": 0, "shared": 1, "warp": 2, "local": 3}


def shared_thread_vars(stage: Stage) -> set[E.Var]:
    """Variables of thread-bound loops enclosing ``stage`` whose threads share its storage."""
    scope_rank = _SCOPE_RANK.get(stage.scope, 0)
    out: set[E.Var] = set()
    for parent, iv in attach_chain(stage):
        leaves = parent.leaf_iter_vars
        pos = next(n for n, x in enumerate(leaves) if x is iv)
        for x in leaves[:pos + 1]:
            bound = parent.bindings.get(x)
            rank = None if bound is None else thread_rank(bound.thread_tag)
            if rank is not None and scope_rank <= rank:
                out.add(x.var)
    return out


def _free_vars(e: E.Expr) -> list[E.Var]:
    found: list[E.Var] = []
    post_order(e, lambda n: found.append(n) if isinstance(n, E.Var) and n not in found else None)
    return found


class BoundInfo:
    """Results of bound inference: ``dom[stage][iv] = (min, extent)`` and loop-variable ranges.

    ``split_guards`` (GPU targets) also guards splits of axes that are themselves split or fused
    results, so no two threads of a cooperative fetch split unevenly handle one element.
    """

    def __init__(self, split_guards: bool = False) -> None:
        self.split_guards = split_guards
        self.dom: dict[int, dict[IterVar, Rng]] = {}
        self.loop_ext: dict[int, dict[IterVar, E.Expr]] = {}
        self.var_ranges: dict[E.Var, Rng] = {}

    def root_values(self, stage: Stage) -> dict[E.Var, E.Expr]:
        """``{root var: min + index}`` where index is rebuilt from the stage's loop variables."""
        dom = self.dom[id(stage)]
        vals: dict[IterVar, E.Expr] = {iv: iv.var for iv in stage.leaf_iter_vars}
        for rel in reversed(stage.relations):
            if isinstance(rel, Split):
                vals[rel.parent] = vals[rel.outer] * dom[rel.inner][1] + vals[rel.inner]
            else:
                ext = dom[rel.inner][1]
                vals[rel.outer] = vals[rel.fused] // ext
                vals[rel.inner] = vals[rel.fused] % ext
        out = {}
        for iv in stage.op.axis + stage.op.reduce_axis:
            out[iv.var] = simplify(dom[iv][0] + vals[iv], self.var_ranges)
        self._rel = vals
        return out

    def guards(self, stage: Stage, reduce: bool) -> list[E.Expr]:
        """Conditions that keep rebuilt root indices inside their extents (non-dividing splits)."""
        absolute = self.root_values(stage)
        dom = self.dom[id(stage)]
        conds = []
        axes = stage.op.reduce_axis if reduce else stage.op.axis
        checked = [(iv, True) for iv in axes]
        if self.split_guards:  # TVM's bound checks of split axes that are not root axes too
            kind = COMM_REDUCE if reduce else DATA_PAR
            checked += [(rel.parent, False) for rel in stage.relations if isinstance(rel, Split)
                        and rel.parent.iter_type == kind and all(rel.parent is not r for r in axes)]
        for iv, is_root in checked:
            checks = [self._rel[iv] < dom[iv][1]]
            if not reduce and is_root:  # regions of attached stages may overhang the tensor
                value = absolute[iv.var]
                checks += [value < iv.dom.extent, value >= 0]
            for c in checks:
                cond = simplify(c, self.var_ranges)
                if _within_loop(cond, self.var_ranges):
                    continue
                if not (isinstance(cond, E.IntImm) and cond.value) and all(
                        skey(cond) != skey(o) for o in conds):
                    conds.append(cond)
        return conds


def _within_loop(cond: E.Expr, var_ranges: dict[E.Var, Rng]) -> bool:
    """True for ``v < extent`` and ``v >= 0`` of a loop variable ``v`` over ``[0, extent)``: what
    simplify cannot prove when the extent is symbolic (a ``te.var`` size)."""
    if isinstance(cond, E.GE) and isinstance(cond.b, E.IntImm) and cond.b.value <= 0:
        return _non_negative(cond.a, var_ranges)
    if not isinstance(cond, E.LT) or not isinstance(cond.a, E.Var) or cond.a not in var_ranges:
        return False
    lo, ext = var_ranges[cond.a]
    return isinstance(lo, E.IntImm) and lo.value == 0 and skey(cond.b) == skey(ext)


def _non_negative(e: E.Expr, var_ranges: dict[E.Var, Rng]) -> bool:
    """True when ``e`` is built of loop variables starting at 0 or above and non-negative constants
    by ``+``, ``*``, ``//`` and ``%`` (by positive constants)."""
    if isinstance(e, E.IntImm):
        return e.value >= 0
    if isinstance(e, E.Var):
        lo = var_ranges.get(e, (None, None))[0]
        return isinstance(lo, E.IntImm) and lo.value >= 0
    if isinstance(e, (E.Add, E.Mul)):
        return _non_negative(e.a, var_ranges) and _non_negative(e.b, var_ranges)
    if isinstance(e, (E.FloorDiv, E.FloorMod)):
        return isinstance(e.b, E.IntImm) and e.b.value > 0 and _non_negative(e.a, var_ranges)
    return False


def infer_bounds(sch: Schedule, stages: list[Stage], bodies: InlinedBodies, full: set[int],
                 relax_threads: bool = False) -> BoundInfo:
    """Infer the ranges of ``stages`` (computed, not inlined; producers first).

    ``full`` holds ids of stages that must be computed over their whole domain (outputs);
    ``relax_threads`` relaxes the thread loops sharing a stage's storage (GPU targets).
    """
    info = BoundInfo(split_guards=relax_threads)
    for stage in reversed(stages):
        consumers = [c for c in stages if c is not stage and reads_of(bodies.of(c), sch, stage)]
        root: dict[IterVar, Rng] = {}
        region = None
        if id(stage) not in full and consumers:
            region = _region(sch, stage, consumers, bodies, info, relax_threads)
        for d, iv in enumerate(stage.op.axis):
            root[iv] = (iv.dom.min, iv.dom.extent) if region is None else region[d]
        for iv in stage.op.reduce_axis:
            root[iv] = (iv.dom.min, iv.dom.extent)
        _pass_down(stage, root, info)
    return info


def _region(sch: Schedule, stage: Stage, consumers: list[Stage], bodies: InlinedBodies, info: BoundInfo,
            relax_threads: bool) -> list[Rng]:
    scope = scope_vars(stage)
    if relax_threads:
        scope -= shared_thread_vars(stage)
    shape = stage.op.output(0).shape
    los: list[list[E.Expr | None]] = [[] for _ in shape]
    his: list[list[E.Expr | None]] = [[] for _ in shape]
    relaxed: dict[Hashable, tuple[E.Expr | None, E.Expr | None]] = {}  # reads repeat (unrolled stages)
    for c in consumers:
        vals = info.root_values(c)
        for idx in reads_of(bodies.of(c), sch, stage):
            for d, e in enumerate(idx):
                index = substitute(e, vals)
                key = skey(index)
                if key not in relaxed:
                    relaxed[key] = _relax(index, scope, info)
                lo, hi = relaxed[key]
                los[d].append(lo)
                his[d].append(hi)
    out = []
    for d, n in enumerate(shape):
        lo, hi = _union(los[d], E.Min), _union(his[d], E.Max)
        if lo is None or hi is None:
            out.append((E.IntImm(0), E.convert(n)))
            continue
        lo, hi = simplify(lo, info.var_ranges), simplify(hi, info.var_ranges)
        ext = simplify(hi - lo + 1, info.var_ranges)
        if not isinstance(n, int) and not isinstance(ext, E.IntImm):  # a symbolic size (te.var): its whole
            if int_bounds(ext, info.var_ranges)[1] is None:             # extent where no constant bounds it
                out.append((E.IntImm(0), n))
                continue
        if not isinstance(ext, E.IntImm):  # e.g. a union of shifted windows: widen to a constant
            ext = E.IntImm(const_upper(ext, info, f"stage {stage.name}, axis {stage.op.axis[d].var.name}"))
        if isinstance(lo, E.IntImm) and isinstance(hi, E.IntImm) and isinstance(n, int):  # inside the domain
            lo, hi = E.IntImm(max(lo.value, 0)), E.IntImm(min(hi.value, n - 1))
            ext = E.IntImm(max(hi.value - lo.value + 1, 1))
        out.append((lo, ext))
    return out


def _union(items: list[E.Expr | None], cls: type) -> E.Expr | None:
    if not items or any(i is None for i in items):
        return None
    out = items[0]
    for x in items[1:]:
        out = cls(out, x)
    return out


def _relax(e: E.Expr, scope: set[E.Var], info: BoundInfo) -> tuple[E.Expr | None, E.Expr | None]:
    lo, hi = e, e
    for _ in range(64):
        free = [v for v in _free_vars(lo) + _free_vars(hi) if v not in scope]
        if not free:
            return simplify(lo, info.var_ranges), simplify(hi, info.var_ranges)
        relax = {}
        for v in free:
            r = info.var_ranges.get(v)
            if r is None:
                return None, None
            relax[v] = (r[0], r[0] + r[1] - 1)
        lo = eval_interval(lo, relax, info.var_ranges)[0]
        hi = eval_interval(hi, relax, info.var_ranges)[1]
        if lo is None or hi is None:
            return lo and simplify(lo, info.var_ranges), hi and simplify(hi, info.var_ranges)
        lo, hi = simplify(lo, info.var_ranges), simplify(hi, info.var_ranges)
    raise LoweringError("bound inference did not converge")


def const_upper(e: E.Expr, info: BoundInfo, what: str) -> int:
    """A constant upper bound of ``e`` under the loop ranges, or LoweringError naming ``what``."""
    if isinstance(e, E.IntImm):
        return e.value
    hi = int_bounds(e, info.var_ranges)[1]
    if hi is None:
        hi = const_bounds(e, info.var_ranges)[1]
    if hi is None:
        raise LoweringError(f"{what}: cannot find a constant upper bound for {e}")
    return hi


def _pass_down(stage: Stage, root: dict[IterVar, Rng], info: BoundInfo) -> None:
    dom: dict[IterVar, Rng] = dict(root)
    zero = E.IntImm(0)
    for rel in stage.relations:
        if isinstance(rel, Split):
            ext = dom[rel.parent][1]
            if rel.factor is not None:
                f = rel.factor
                if isinstance(ext, E.IntImm) and ext.value <= f:
                    inner, outer = ext, E.IntImm(1)
                else:
                    inner, outer = E.IntImm(f), simplify((ext + (f - 1)) // f, info.var_ranges)
            else:
                n = rel.nparts
                if int_bounds(ext, info.var_ranges)[1] is None:  # a symbolic size (te.var)
                    inner, outer = simplify((ext + (n - 1)) // n, info.var_ranges), E.IntImm(n)
                else:
                    ub = const_upper(ext, info, f"stage {stage.name}, axis {rel.parent.var.name}")
                    inner = E.IntImm(-(-ub // n))
                    outer = E.IntImm(-(-ub // inner.value)) if isinstance(ext, E.IntImm) else E.IntImm(n)
            dom[rel.outer], dom[rel.inner] = (zero, outer), (zero, inner)
        elif isinstance(rel, Fuse):
            dom[rel.fused] = (zero, simplify(dom[rel.outer][1] * dom[rel.inner][1], info.var_ranges))
    loops = {}
    for iv in stage.leaf_iter_vars:
        ext = dom[iv][1]
        if stage.iter_var_attrs.get(iv) in ("vectorized", "unrolled") and not isinstance(ext, E.IntImm):
            ext = E.IntImm(const_upper(ext, info, f"stage {stage.name}, axis {iv.var.name}"))
        loops[iv] = ext
        info.var_ranges[iv.var] = (zero, ext)
    info.dom[id(stage)] = dom
    info.loop_ext[id(stage)] = loops
