"""Storage sync: a block-wide barrier wherever threads may read shared memory that other threads
wrote, or overwrite shared memory other threads still read (TVM's ThreadSync for ``shared``).

The barrier is ``tvm_storage_sync("shared")`` (``bar.sync`` in PTX).  Every thread of a block
must reach it, so it is only placed where all threads run the same statements: inside loops
bound to ``blockIdx``, inside ``threadIdx`` loops as wide as the launched axis, inside serial
(and ``vthread``) loops whose bounds do not depend on the thread, and inside conditions that do
not.  Anything else (a ``threadIdx`` loop narrower than its axis, a condition on the thread
index) is one unit whose shared reads and writes count as a whole.

Walking a sequence, the shared buffers written and read since the last barrier are pending; a
statement that reads a pending write (read after write) or writes a pending read (write after
read) gets a barrier before it, before the whole loop or condition when the access is inside
one (a barrier per loop, not per iteration).  In a loop, what is pending at the end of an iteration is
pending at the start of the next one, so ``for k: fetch A; compute reads A`` becomes
``for k: sync; fetch A; sync; compute`` as in TVM.  Access indices are not compared: a barrier
is placed whenever two threads *may* touch the same element.
"""

from __future__ import annotations

from dataclasses import dataclass

from tunecli.engine.ir import expr as E
from tunecli.engine.ir import stmt as S
from tunecli.engine.ir.visitor import post_order
from tunecli.errors import LoweringError

from .thread_scope import LAUNCH_TAGS

SYNC_CALL = "tvm_storage_sync"


def barrier() -> S.Stmt:
    """``tvm_storage_sync("shared")``: wait until every thread of the block has got here."""
    return S.Evaluate(E.Call("int32", SYNC_CALL, [E.StringImm("shared")]))


def is_barrier(s: S.Stmt) -> bool:
    """True for the statement :func:`barrier` makes."""
    return isinstance(s, S.Evaluate) and isinstance(s.value, E.Call) and s.value.name == SYNC_CALL


@dataclass(frozen=True)
class _Pending:
    """Shared buffers written and read since the last barrier."""

    writes: frozenset[S.Buffer] = frozenset()
    reads: frozenset[S.Buffer] = frozenset()

    def __or__(self, other: _Pending) -> _Pending:
        return _Pending(self.writes | other.writes, self.reads | other.reads)

    def conflicts(self, access: _Pending) -> bool:
        return bool(access.reads & self.writes or access.writes & self.reads)


def _shared_access(s: S.Stmt) -> _Pending:
    writes: set[S.Buffer] = set()
    reads: set[S.Buffer] = set()

    def see(n: object) -> None:
        if isinstance(n, S.BufferStore) and n.buffer.scope == "shared":
            writes.add(n.buffer)
        elif isinstance(n, E.BufferLoad) and n.buffer.scope == "shared":
            reads.add(n.buffer)

    post_order(s, see)
    return _Pending(frozenset(writes), frozenset(reads))


def _uses(e: E.Expr | tuple[E.Expr, ...], names: set[E.Var]) -> bool:
    found: list[bool] = []
    post_order(e, lambda n: found.append(True) if isinstance(n, E.Var) and n in names else None)
    return bool(found)


def _exposed(s: S.Stmt) -> tuple[_Pending, bool]:
    """Shared accesses ``s`` may make before its first barrier, and whether it always passes one."""
    if is_barrier(s):
        return _Pending(), True
    if isinstance(s, S.SeqStmt):
        seen = _Pending()
        for x in s.stmts:
            access, synced = _exposed(x)
            seen = seen | access
            if synced:
                return seen, True
        return seen, False
    if isinstance(s, (S.Allocate, S.LetStmt)):
        return _exposed(s.body)
    if isinstance(s, S.For):
        access, synced = _exposed(s.body)
        return access, synced and isinstance(s.extent, E.IntImm) and s.extent.value > 0
    if isinstance(s, S.IfThenElse):
        then, then_synced = _exposed(s.then_case)
        other, other_synced = (_Pending(), False) if s.else_case is None else _exposed(s.else_case)
        return then | other, then_synced and other_synced
    return _shared_access(s), False


class _Planner:
    def __init__(self, launch: dict[str, int]) -> None:
        self.launch = launch
        self.thread_vars: set[E.Var] = set()

    def plan(self, s: S.Stmt, pending: _Pending) -> tuple[S.Stmt, _Pending]:
        if isinstance(s, S.SeqStmt):
            out = []
            for x in s.stmts:
                x, pending = self.plan(x, pending)
                out.append(x)
            return S.SeqStmt(out), pending
        if isinstance(s, S.Allocate):
            body, pending = self.plan(s.body, pending)
            return S.Allocate(s.buffer, body), pending
        if isinstance(s, S.LetStmt):
            if _uses(s.value, self.thread_vars):
                self.thread_vars.add(s.var)
            body, pending = self.plan(s.body, pending)
            return S.LetStmt(s.var, s.value, body), pending
        uniform_if = isinstance(s, S.IfThenElse) and not _uses(s.condition, self.thread_vars)
        if not (uniform_if or isinstance(s, S.For) and self._uniform(s)):
            return self._unit(s, pending)
        # planned on its own; a barrier because of what came before goes before it all, and only
        # when what it may access before its own first barrier conflicts
        if isinstance(s, S.IfThenElse):
            then, after = self.plan(s.then_case, _Pending())
            other, after_else = None, _Pending()
            if s.else_case is not None:
                other, after_else = self.plan(s.else_case, _Pending())
            planned, after = S.IfThenElse(s.condition, then, other), after | after_else
        else:
            planned, after = self._loop(s, _Pending())
        exposed, synced = _exposed(planned)
        if pending.conflicts(exposed):
            return S.SeqStmt([barrier(), planned]), after
        return planned, after if synced else after | pending

    def _uniform(self, s: S.For) -> bool:
        tag = s.thread_tag or ""
        if tag.startswith("threadIdx."):
            return isinstance(s.extent, E.IntImm) and s.extent.value == self.launch.get(tag, 1)
        return tag.startswith("blockIdx.") or not _uses((s.min, s.extent), self.thread_vars)

    def _loop(self, s: S.For, pending: _Pending) -> tuple[S.Stmt, _Pending]:
        if s.thread_tag in LAUNCH_TAGS:  # one iteration per block or thread
            if s.thread_tag.startswith("threadIdx."):
                self.thread_vars.add(s.loop_var)
            body, after = self.plan(s.body, pending)
            return s.replace(body=body), after
        entry = pending
        while True:  # what the last iteration leaves pending is pending at the start of the next
            body, after = self.plan(s.body, entry)
            if entry | after == entry:
                return s.replace(body=body), after | pending
            entry = entry | after

    @staticmethod
    def _unit(s: S.Stmt, pending: _Pending) -> tuple[S.Stmt, _Pending]:
        access = _shared_access(s)
        if isinstance(s, (S.For, S.IfThenElse)) and access.writes & access.reads:
            names = sorted(b.name for b in access.writes & access.reads)
            raise LoweringError(f"storage sync: shared {', '.join(names)} is written and read under a "
                                "loop or condition that only some threads of the block run, where no "
                                "barrier can be placed; bind loops so all threads of the block reach it")
        if pending.conflicts(access):
            return S.SeqStmt([barrier(), s]), access
        return s, pending | access


def insert_shared_sync(body: S.Stmt, launch: dict[str, int]) -> S.Stmt:
    """``body`` with a barrier before each statement that needs one (see the module docstring).

    Parameters
    ----------
    body : Stmt
        A lowered kernel body.
    launch : dict
        ``{thread tag: launched extent}`` (``thread_scope.launch_extents``).
    """
    planned, _ = _Planner(launch).plan(body, _Pending())
    return planned
