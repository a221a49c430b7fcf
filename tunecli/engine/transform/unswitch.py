"""Loop unswitching of guards (IR → IR): a guard that a loop does not change moves out of it.

A split that does not divide its axis leaves guards such as ``if (yo * 2 + 1 < 7)`` on the
copies of an unrolled register block.  Inside a reduction loop they cost a branch per
iteration and keep the block from staying in registers.  For every loop whose body holds a
scalar ``if`` whose condition reads only integer variables bound outside the loop, the loop is
versioned: ``if (cond) { loop, then-branch taken } else { loop, else-branch taken }``.
Enclosing loops that do not change the condition either hoist it further, so each condition
is tested once, as far out as it can go.  This is what TVM's loop partitioning does for the
tails of non-dividing splits.  Vector (lane-masking) conditions stay where they are.

At most :data:`MAX_VERSIONS_LOG2` conditions version one loop (``2**n`` copies of it), and
none once its copies would hold more than :data:`MAX_NODES` IR nodes.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable

from tunecli.engine.ir import expr as E
from tunecli.engine.ir import stmt as S
from tunecli.engine.ir.dtype import parse_dtype
from tunecli.engine.ir.interval import Ranges
from tunecli.engine.ir.simplify import simplify, skey
from tunecli.engine.ir.visitor import Mutator, post_order

from .unroll import node_count

MAX_VERSIONS_LOG2 = 3
MAX_NODES = 80_000


def unswitch(stmt: S.Stmt) -> S.Stmt:
    """Return ``stmt`` with loop-invariant guards hoisted out of the loops that do not change them."""
    normal = _normalize_guards(stmt, {}, frozenset())
    return S.Evaluate(E.const(0)) if normal is None else _Unswitch().visit(normal)


class _Unswitch(Mutator):
    def visit_For(self, loop: S.For) -> S.Stmt | None:
        body = self.visit(loop.body)
        loop = loop if body is loop.body else loop.replace(body=body)
        if loop.kind == S.VECTORIZED or loop.thread_tag is not None:
            return loop
        return _version(loop, MAX_VERSIONS_LOG2)


def _version(loop: S.For | None, depth: int) -> S.Stmt | None:
    """``loop`` behind tests of up to ``depth`` of its invariant guards, one version per outcome."""
    if loop is None or depth == 0:
        return loop
    cond = _invariant_guard(loop)
    if cond is None or 2 * node_count(loop) > MAX_NODES:
        return loop
    key = skey(cond)
    taken, dropped = _assume(loop, key, True), _assume(loop, key, False)
    if taken is None and dropped is None:
        return None
    if dropped is None:
        return S.IfThenElse(cond, _version(taken, depth - 1))
    if taken is None:
        return S.IfThenElse(E.Not(cond), _version(dropped, depth - 1))
    return S.IfThenElse(cond, _version(taken, depth - 1), _version(dropped, depth - 1))


def _invariant_guard(loop: S.For) -> E.Expr | None:
    """The first guard inside ``loop`` that reads no variable bound in ``loop`` (None if none)."""
    guards: list[E.Expr] = []
    _pre_order(loop.body, lambda n: guards.append(n.condition) if isinstance(n, S.IfThenElse) else None)
    if not any(_scalar(g) for g in guards):
        return None
    bound: set[int] = {id(loop.loop_var)}

    def bind(n: object) -> None:
        if isinstance(n, S.For):
            bound.add(id(n.loop_var))
        elif isinstance(n, (S.LetStmt, E.Let)):
            bound.add(id(n.var))

    post_order(loop.body, bind)
    found: list[E.Expr] = []

    def see(n: S.Stmt) -> None:
        if not found and isinstance(n, S.IfThenElse) and _invariant(n.condition, bound):
            found.append(n.condition)

    _pre_order(loop.body, see)
    return found[0] if found else None


def _invariant(cond: E.Expr, bound: set[int]) -> bool:
    """True when ``cond`` is an integer test over variables outside ``bound`` (no memory reads)."""
    ok = [True]

    def check(n: object) -> None:
        if isinstance(n, E.Var) and id(n) in bound:
            ok[0] = False
        elif isinstance(n, (E.BufferLoad, E.Call)):
            ok[0] = False

    post_order(cond, check)
    return ok[0] and _scalar(cond) and not isinstance(cond, E.IntImm)


def _scalar(cond: E.Expr) -> bool:
    """True for a scalar test (a vector one masks lanes and stays where it is)."""
    return parse_dtype(cond.dtype).lanes == 1


def _pre_order(node: S.Stmt | None, fn: Callable[[S.Stmt], object]) -> None:
    """Call ``fn`` on every statement of the tree, parents first."""
    if node is None:
        return
    fn(node)
    if isinstance(node, S.SeqStmt):
        for s in node.stmts:
            _pre_order(s, fn)
    elif isinstance(node, S.IfThenElse):
        _pre_order(node.then_case, fn)
        _pre_order(node.else_case, fn)
    elif isinstance(node, (S.For, S.Allocate, S.LetStmt)):
        _pre_order(node.body, fn)


def _assume(stmt: S.Stmt | None, key: Hashable, value: bool) -> S.Stmt | None:
    """``stmt`` with every ``if`` on the condition ``key`` resolved to ``value`` (None: nothing left)."""
    if stmt is None:
        return None
    if isinstance(stmt, S.IfThenElse):
        if skey(stmt.condition) == key:
            return _assume(stmt.then_case if value else stmt.else_case, key, value)
        then, other = _assume(stmt.then_case, key, value), _assume(stmt.else_case, key, value)
        if then is None and other is None:
            return None
        if then is None:
            return S.IfThenElse(E.Not(stmt.condition), other)
        if then is stmt.then_case and other is stmt.else_case:
            return stmt
        return S.IfThenElse(stmt.condition, then, other)
    if isinstance(stmt, S.SeqStmt):
        items = [_assume(s, key, value) for s in stmt.stmts]
        kept = [s for s in items if s is not None]
        if not kept:
            return None
        if all(a is b for a, b in zip(items, stmt.stmts, strict=True)):
            return stmt
        return S.seq(*kept)
    if isinstance(stmt, (S.For, S.Allocate, S.LetStmt)):
        body = _assume(stmt.body, key, value)
        if body is None:
            return None
        return stmt if body is stmt.body else stmt.replace(body=body)
    return stmt


def _normalize_guards(stmt: S.Stmt | None, ranges: Ranges, known: frozenset[Hashable]) -> S.Stmt | None:
    """Guards split into their conjuncts (``if (a && b)`` → ``if (a) if (b)``), each simplified
    under the ranges of the enclosing loops, constant ones resolved and repeated ones dropped
    (None: nothing left)."""
    if stmt is None:
        return None
    if isinstance(stmt, S.IfThenElse) and _scalar(stmt.condition):
        if stmt.else_case is None and isinstance(stmt.condition, E.And):
            inner = S.IfThenElse(stmt.condition.b, stmt.then_case)
            return _normalize_guards(S.IfThenElse(stmt.condition.a, inner), ranges, known)
        cond = simplify(stmt.condition, ranges)
        key = skey(cond)
        if isinstance(cond, E.IntImm) or key in known:
            taken = key in known or bool(cond.value)
            return _normalize_guards(stmt.then_case if taken else stmt.else_case, ranges, known)
        then = _normalize_guards(stmt.then_case, ranges, known | {key})
        other = _normalize_guards(stmt.else_case, ranges, known)
        if then is None and other is None:
            return None
        if then is None:
            return S.IfThenElse(E.Not(cond), other)
        if then is stmt.then_case and other is stmt.else_case and key == skey(stmt.condition):
            return stmt
        return S.IfThenElse(cond, then, other)
    if isinstance(stmt, S.IfThenElse):
        then = _normalize_guards(stmt.then_case, ranges, known)
        other = _normalize_guards(stmt.else_case, ranges, known)
        if then is stmt.then_case and other is stmt.else_case:
            return stmt
        return S.IfThenElse(stmt.condition, then or S.Evaluate(E.const(0)), other)
    if isinstance(stmt, S.SeqStmt):
        items = [_normalize_guards(x, ranges, known) for x in stmt.stmts]
        if all(a is b for a, b in zip(items, stmt.stmts, strict=True)):
            return stmt
        kept = [n for n in items if n is not None]
        return S.seq(*kept) if kept else None
    if isinstance(stmt, (S.For, S.Allocate, S.LetStmt)):
        inner = {**ranges, stmt.loop_var: (stmt.min, stmt.extent)} if isinstance(stmt, S.For) else ranges
        body = _normalize_guards(stmt.body, inner, known)
        if body is None:
            return None
        return stmt if body is stmt.body else stmt.replace(body=body)
    return stmt
