"""Virtual threads: loops bound to ``vthread`` interleaved into their thread (TVM's
InjectVirtualThread).

A ``vthread`` loop of ``n`` iterations does not become ``n`` hardware threads: each thread runs
the work of its ``n`` virtual threads, interleaved.  The loop disappears and, inside its body,

* what does not depend on the virtual thread runs once (a shared-memory fetch relaxed over the
  virtual threads: every virtual thread of the block needs the same tile);
* a statement that does (it uses the loop variable, reads or writes a buffer whose contents
  depend on it) runs once per virtual thread: ``n`` copies with the variable replaced by
  ``0 .. n-1`` when it holds no loop and ``n < 16``, else a loop over them, marked ``unrolled``
  (TVM unrolls it after injection; the widened local buffers then stay in registers; codegen's
  caps keep a too large body a loop);
* loops and conditions that do not depend on it are kept, the copies inside them (so a
  reduction loop holds the updates of all virtual threads);
* a buffer allocated inside whose contents depend on the virtual thread (a ``local``
  accumulator) gets ``n`` times the room, virtual thread ``v`` using the part at ``v * size``.

Innermost ``vthread`` loops are injected first.
"""

from __future__ import annotations

from collections.abc import Sequence

from tunecli.engine.ir import expr as E
from tunecli.engine.ir import stmt as S
from tunecli.engine.ir.node import Node
from tunecli.engine.ir.visitor import Mutator, post_order, substitute
from tunecli.errors import LoweringError

VTHREAD_TAGS = ("vthread", "cthread")
#: PrimFunc attribute of a lowered GPU kernel: how many virtual threads each thread ran.
VTHREADS_ATTR = "vthreads"
UNROLL_BELOW = 16  # TVM: copies instead of a loop when fewer virtual threads than this

#: What a dependence check walks: a node or a tuple of nodes.
_Tree = Node | tuple[object, ...]


def _touched(body: S.Stmt, var: E.Var) -> tuple[set[E.Var], set[S.Buffer]]:
    """Variables and buffers whose values depend on ``var`` in ``body`` (to a fixed point)."""
    names: set[E.Var] = {var}
    buffers: set[S.Buffer] = set()
    stores: list[S.BufferStore] = []
    lets: list[S.LetStmt | E.Let] = []
    post_order(body, lambda n: stores.append(n) if isinstance(n, S.BufferStore)
               else lets.append(n) if isinstance(n, (S.LetStmt, E.Let)) else None)
    changed = True
    while changed:
        changed = False
        for let in lets:
            if let.var not in names and _uses(let.value, names, buffers):
                names.add(let.var)
                changed = True
        for store in stores:
            if store.buffer not in buffers and _uses((store.value, store.indices), names, buffers):
                buffers.add(store.buffer)
                changed = True
    return names, buffers


def _uses(node: _Tree, names: set[E.Var], buffers: set[S.Buffer]) -> bool:
    found: list[bool] = []

    def see(n: object) -> None:
        if (isinstance(n, E.Var) and n in names) or (isinstance(n, E.BufferLoad) and n.buffer in buffers):
            found.append(True)

    post_order(node, see)
    return bool(found)


def _depth(s: S.Stmt) -> int:
    if isinstance(s, S.For):
        return 1 + _depth(s.body)
    if isinstance(s, S.SeqStmt):
        return max((_depth(x) for x in s.stmts), default=0)
    if isinstance(s, (S.Allocate, S.LetStmt)):
        return _depth(s.body)
    if isinstance(s, S.IfThenElse):
        return max(_depth(s.then_case), _depth(s.else_case) if s.else_case is not None else 0)
    return 0


class _Remap(Mutator):
    """Accesses of expanded buffers: the buffer with ``n`` times the room, at ``index + v * size``."""

    def __init__(self, var: E.Var, remap: dict[S.Buffer, tuple[S.Buffer, int]]) -> None:
        self.var, self.remap = var, remap

    def _index(self, buffer: S.Buffer, indices: Sequence[E.Expr]) -> tuple[S.Buffer, list[E.Expr]]:
        new, size = self.remap[buffer]
        if len(indices) != 1:
            raise LoweringError(f"vthread: access of {buffer.name} is not flat")
        return new, [indices[0] + self.var * size]

    def visit_BufferLoad(self, e: E.BufferLoad) -> E.Expr:
        e = self.generic_visit(e)
        if e.buffer not in self.remap:
            return e
        return E.BufferLoad(*self._index(e.buffer, e.indices))

    def visit_BufferStore(self, s: S.BufferStore) -> S.Stmt:
        s = self.generic_visit(s)
        if s.buffer not in self.remap:
            return s
        buffer, indices = self._index(s.buffer, s.indices)
        return S.BufferStore(buffer, s.value, indices)


class _Injector:
    def __init__(self, loop: S.For) -> None:
        if not isinstance(loop.extent, E.IntImm) or not isinstance(loop.min, E.IntImm):
            raise LoweringError(f"vthread loop {loop.loop_var.name} must have constant bounds")
        self.var, self.n, self.min = loop.loop_var, loop.extent.value, loop.min.value
        self.names, self.buffers = _touched(loop.body, loop.loop_var)
        self.remap: dict[S.Buffer, tuple[S.Buffer, int]] = {}

    def touches(self, node: _Tree) -> bool:
        return _uses(node, self.names, self.buffers) or _stores_to(node, self.buffers)

    def stmt(self, s: S.Stmt) -> S.Stmt:
        if isinstance(s, S.SeqStmt):
            return S.SeqStmt([self.stmt(x) for x in s.stmts])
        if isinstance(s, S.Allocate):
            if s.buffer not in self.buffers:
                return S.Allocate(s.buffer, self.stmt(s.body))
            size = s.buffer.size
            wide = S.Buffer(s.buffer.name, (size * self.n,), s.buffer.dtype, s.buffer.scope)
            self.remap[s.buffer] = (wide, size)
            return S.Allocate(wide, self.stmt(s.body))
        if isinstance(s, S.For) and not self.touches((s.min, s.extent)):
            return s.replace(body=self.stmt(s.body))
        if isinstance(s, S.IfThenElse) and not self.touches(s.condition):
            other = None if s.else_case is None else self.stmt(s.else_case)
            return S.IfThenElse(s.condition, self.stmt(s.then_case), other)
        if isinstance(s, S.LetStmt) and not self.touches(s.value):
            return S.LetStmt(s.var, s.value, self.stmt(s.body))
        if not self.touches(s):
            return s
        return self.inject(s)

    def inject(self, s: S.Stmt) -> S.Stmt:
        """``s`` once per virtual thread: copies, or a loop when ``s`` holds loops or ``n`` is large."""
        body = _Remap(self.var, self.remap).visit(s) if self.remap else s
        if _depth(s) == 0 and self.n < UNROLL_BELOW:
            return S.SeqStmt([substitute(body, {self.var: E.IntImm(self.min + i, self.var.dtype)})
                              for i in range(self.n)])
        v = E.Var(self.var.name + ".s", self.var.dtype)
        return S.For(v, E.IntImm(self.min, v.dtype), E.IntImm(self.n, v.dtype), S.UNROLLED,
                     substitute(body, {self.var: v}))


def _stores_to(node: _Tree, buffers: set[S.Buffer]) -> bool:
    found: list[bool] = []
    post_order(node, lambda n: found.append(True) if isinstance(n, S.BufferStore) and n.buffer in buffers
               else None)
    return bool(found)


class _Inject(Mutator):
    def visit_For(self, s: S.For) -> S.Stmt:
        s = self.generic_visit(s)  # innermost virtual threads first
        if s.thread_tag not in VTHREAD_TAGS:
            return s
        return _Injector(s).stmt(s.body)


def inject_virtual_threads(body: S.Stmt) -> S.Stmt:
    """``body`` with every ``vthread`` loop interleaved into its thread (see the module docstring)."""
    return _Inject().visit(body)


def vthread_count(body: S.Stmt) -> int:
    """The most virtual threads one thread runs: the product of nested ``vthread`` extents."""

    def count(s: S.Stmt) -> int:
        if isinstance(s, S.For):
            inner = count(s.body)
            if s.thread_tag in VTHREAD_TAGS and isinstance(s.extent, E.IntImm):
                return s.extent.value * inner
            return inner
        if isinstance(s, S.SeqStmt):
            return max((count(x) for x in s.stmts), default=1)
        if isinstance(s, (S.Allocate, S.LetStmt)):
            return count(s.body)
        if isinstance(s, S.IfThenElse):
            return max(count(s.then_case), count(s.else_case) if s.else_case is not None else 1)
        return 1

    return count(body)
