"""Schedule → loop nest: loops per stage, attach points, reductions (init + update), guards."""

from __future__ import annotations

from tunecli.engine.ir import expr as E
from tunecli.engine.ir import stmt as S
from tunecli.engine.ir.visitor import post_order, substitute
from tunecli.engine.schedule.stage import Stage
from tunecli.engine.te.reduction import Reduce
from tunecli.engine.te.tensor import COMM_REDUCE, IterVar, Tensor
from tunecli.engine.transform.auto_unroll import auto_unroll, pragma_max_step
from tunecli.errors import LoweringError

from .bound import BoundInfo, attach_of
from .inline import InlinedBodies
from .storage import Storage
from .thread_scope import LAUNCH_TAGS


class NestBuilder:
    """Build the statement of every stage and place attached stages inside their parents' loops."""

    def __init__(self, stages: list[Stage], bodies: InlinedBodies, info: BoundInfo, storage: Storage) -> None:
        self.stages = stages
        self.bodies = bodies
        self.info = info
        self.storage = storage
        self.children: dict[tuple[int, int], list[Stage]] = {}
        self.roots: list[Stage] = []
        self.bound_vars = {iv.var for st in stages for iv in st.bindings}
        for st in stages:
            a = attach_of(st)
            if a is None:
                self.roots.append(st)
            else:
                parent, iv = a
                if all(parent is not s for s in stages):
                    raise LoweringError(f"stage {st.name} is computed at stage {parent.name}, which is "
                                        "inlined or not part of the schedule")
                self.children.setdefault((id(parent), id(iv)), []).append(st)

    def build(self) -> S.Stmt:
        """The whole loop nest."""
        return self._place(self.roots, None)

    def _place(self, stages: list[Stage], rest: S.Stmt | None) -> S.Stmt:
        stmt = rest
        for st in reversed(stages):
            stmt = S.seq(self._stage(st), stmt)
            for buf in reversed(self.storage.temp_buffers(st)):
                stmt = S.Allocate(buf, stmt)
        return stmt if stmt is not None else S.SeqStmt([])

    def _loops(self, stage: Stage, leaves: list[IterVar], body: S.Stmt, attach: bool = True,
               conds: list[E.Expr] | None = None) -> S.Stmt:
        """Loops over ``leaves`` around ``body``; each guard in ``conds`` sits just inside the
        innermost loop whose variable it uses (so invariant guards leave vectorized loops)."""
        dom = self.info.loop_ext[id(stage)]
        placed = _place_guards(conds or [], leaves)
        body = _guard(placed.get(len(leaves), []), body)
        for n in range(len(leaves) - 1, -1, -1):
            iv = leaves[n]
            if n < len(leaves) - 1:
                body = _guard(placed.get(n + 1, []), body)
            if attach:
                kids = self.children.get((id(stage), id(iv)), [])
                if kids:
                    body = self._place(kids, body)
            ext = dom[iv]
            bound = stage.bindings.get(iv)
            launched = bound is not None and bound.thread_tag in LAUNCH_TAGS
            # A block/thread loop of extent 1 stays: its guard keeps the other threads of the
            # launch (a larger extent bound by another stage) from repeating the body.
            if isinstance(ext, E.IntImm) and ext.value == 1 and not launched:
                body = substitute(body, {iv.var: E.IntImm(0)})
            else:
                body = S.For(iv.var, E.IntImm(0), ext, self._kind(stage, iv), body,
                             thread_tag=bound.thread_tag if bound is not None else None)
            max_step = pragma_max_step(stage.pragmas.get(iv, []))
            if max_step is not None:  # TVM: the pragma scope holds the loop of iv itself
                body = auto_unroll(body, max_step, keep=self.bound_vars)
        return _guard(placed.get(0, []), body)

    @staticmethod
    def _kind(stage: Stage, iv: IterVar) -> str:
        """Loop kind of ``iv``: ``serial`` for a thread-bound axis (``Stage.bind``: its
        annotations are ignored, as TVM ignores them on bound axes; the loop carries the thread
        tag instead), else its annotation."""
        if iv in stage.bindings:
            return S.SERIAL
        return stage.iter_var_attrs.get(iv, S.SERIAL)

    def _stage(self, stage: Stage) -> S.Stmt:
        bodies = self.bodies.of(stage)
        body = bodies[0]
        vals = self.info.root_values(stage)
        store_idx = [vals[iv.var] for iv in stage.op.axis]
        outs = [stage.op.output(i) for i in range(stage.op.num_outputs)]
        leaves = stage.leaf_iter_vars
        data_guards = self.info.guards(stage, reduce=False)
        if not isinstance(body, Reduce):
            store = S.seq(*[self.storage.store(out, self.storage.lower_expr(substitute(b, vals)), store_idx)
                            for out, b in zip(outs, bodies, strict=True)])
            return self._loops(stage, leaves, store, conds=data_guards)
        red_guards = self.info.guards(stage, reduce=True)
        first = next((n for n, iv in enumerate(leaves) if iv.iter_type == COMM_REDUCE), len(leaves))
        outer, inner = leaves[:first], leaves[first:]
        init_leaves = [iv for iv in inner if iv.iter_type != COMM_REDUCE]
        identities = list(body.init) if body.init else list(body.combiner.identity_element)
        if body.init:
            identities = [self.storage.lower_expr(substitute(e, vals)) for e in identities]
        init_store = S.seq(*[self.storage.store(out, e, store_idx)
                             for out, e in zip(outs, identities, strict=True)])
        init = self._loops(stage, init_leaves, init_store, attach=False, conds=data_guards)
        accs = [self.storage.load(out, store_idx) for out in outs]
        srcs = [self.storage.lower_expr(substitute(src, vals)) for src in body.source]
        update = self._update(outs, body.combiner.combine_all(accs, srcs), store_idx)
        cond = self.storage.lower_expr(substitute(body.condition, vals))
        conds = data_guards + red_guards + ([] if isinstance(cond, E.IntImm) and cond.value else [cond])
        update_nest = self._loops(stage, inner, update, conds=conds)
        return self._loops(stage, outer, S.seq(init, update_nest))

    def _update(self, outs: list[Tensor], values: list[E.Expr], store_idx: list[E.Expr]) -> S.Stmt:
        """The accumulators' stores; several are bound to variables first, as each new value may
        read every old one (a tuple reduction such as argmax)."""
        if len(outs) == 1:
            return self.storage.store(outs[0], values[0], store_idx)
        temps = [E.Var(f"{out.name}.acc", out.dtype) for out in outs]
        stmt: S.Stmt = S.seq(*[self.storage.store(out, t, store_idx)
                               for out, t in zip(outs, temps, strict=True)])
        for t, v in reversed(list(zip(temps, values, strict=True))):
            stmt = S.LetStmt(t, v, stmt)
        return stmt


def _place_guards(conds: list[E.Expr], leaves: list[IterVar]) -> dict[int, list[E.Expr]]:
    """``{k: guards}``: guard goes inside the first ``k`` loops (k = 1 + its innermost loop)."""
    pos = {id(iv.var): n for n, iv in enumerate(leaves)}
    placed: dict[int, list[E.Expr]] = {}
    for c in conds:
        used = _positions(c, pos)
        placed.setdefault(max(used) + 1 if used else 0, []).append(c)
    return placed


def _positions(cond: E.Expr, pos: dict[int, int]) -> list[int]:
    used: list[int] = []

    def see(x: object) -> None:
        if isinstance(x, E.Var) and id(x) in pos:
            used.append(pos[id(x)])

    post_order(cond, see)
    return used


def _guard(conds: list[E.Expr], stmt: S.Stmt) -> S.Stmt:
    if not conds:
        return stmt
    cond = conds[0]
    for c in conds[1:]:
        cond = cond & c
    return S.IfThenElse(cond, stmt)
