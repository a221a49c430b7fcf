"""Statement nodes of the lowered loop nest, plus Buffer and PrimFunc.

After lowering, every BufferLoad/BufferStore has exactly one (flat, row-major) index; a
vectorized loop is either still a ``For`` of kind ``vectorized`` (codegen turns it into vector
code) or has already been rewritten to Ramp/Broadcast expressions.
"""

from __future__ import annotations

from collections.abc import Sequence

from .dtype import parse_dtype
from .expr import Expr, ExprLike, IntImm, Var, convert
from .node import Node, set_fields

SERIAL = "serial"
PARALLEL = "parallel"
VECTORIZED = "vectorized"
UNROLLED = "unrolled"
FOR_KINDS = (SERIAL, PARALLEL, VECTORIZED, UNROLLED)


def _extent(value: ExprLike) -> int | Expr:
    """An extent as an int when constant, else its integer expression (a symbolic size)."""
    if isinstance(value, int):
        return value
    e = convert(value)
    return int(e.value) if isinstance(e, IntImm) else e


class Buffer:
    """A named region of memory: a function argument (scope ``global``) or a temporary.

    Parameters
    ----------
    name : str
        Name used in printing and in generated code.
    shape : sequence of int
        Extent of each dimension (constants).
    dtype : str
        Element type.
    scope : str
        ``global`` for arguments and heap temporaries, ``local`` for small stack arrays that
        codegen keeps in registers.
    """

    __slots__ = ("name", "shape", "dtype", "scope")

    def __init__(self, name: str, shape: Sequence[ExprLike], dtype: str, scope: str = "global"):
        parse_dtype(dtype)
        self.name = name
        self.shape = tuple(_extent(s) for s in shape)
        self.dtype = dtype
        self.scope = scope

    @property
    def size(self) -> int:
        """Number of elements (an expression when ``is_symbolic``)."""
        n = 1
        for s in self.shape:
            n = s * n
        return n

    @property
    def is_symbolic(self) -> bool:
        """True when an extent is an expression of variables (a ``te.var`` size) rather than an int."""
        return any(not isinstance(s, int) for s in self.shape)

    def __repr__(self) -> str:
        return f"Buffer({self.name}, {list(self.shape)}, {self.dtype}, {self.scope})"


class Stmt(Node):
    """Base of statements."""

    __slots__ = ()


class For(Stmt):
    """``for loop_var in [min, min + extent)`` with kind serial, parallel, vectorized or unrolled.

    ``thread_tag`` names the GPU thread axis the loop is bound to (``blockIdx.x``, ``threadIdx.y``,
    ``vthread`` ...: ``Stage.bind``), else it is None.  A backend without threads runs a bound
    loop as a loop of its kind; a GPU backend maps it to the block or thread index.
    """

    __slots__ = ("loop_var", "min", "extent", "kind", "body", "thread_tag")
    _fields = ("min", "extent", "body")

    def __init__(self, loop_var: Var, min: ExprLike, extent: ExprLike, kind: str, body: Stmt,
                 thread_tag: str | None = None):
        if kind not in FOR_KINDS:
            raise ValueError(f"unknown loop kind {kind!r}")
        set_fields(self, loop_var=loop_var, min=convert(min), extent=convert(extent), kind=kind, body=body,
              thread_tag=thread_tag or None)


class BufferStore(Stmt):
    """``buffer[indices] = value``."""

    __slots__ = ("buffer", "value", "indices")
    _fields = ("value", "indices")

    def __init__(self, buffer: Buffer, value: ExprLike, indices: Sequence[ExprLike]):
        set_fields(self, buffer=buffer, value=convert(value), indices=tuple(convert(i) for i in indices))


class Allocate(Stmt):
    """``buffer`` exists (uninitialised) while ``body`` runs."""

    __slots__ = ("buffer", "body")
    _fields = ("body",)

    def __init__(self, buffer: Buffer, body: Stmt):
        set_fields(self, buffer=buffer, body=body)


class SeqStmt(Stmt):
    """Statements run one after the other."""

    __slots__ = ("stmts",)
    _fields = ("stmts",)

    def __init__(self, stmts: Sequence[Stmt]):
        flat: list[Stmt] = []
        for s in stmts:
            if isinstance(s, SeqStmt):
                flat.extend(s.stmts)
            elif s is not None:
                flat.append(s)
        set_fields(self, stmts=tuple(flat))


class IfThenElse(Stmt):
    """``if condition: then_case else: else_case`` (else_case may be None)."""

    __slots__ = ("condition", "then_case", "else_case")
    _fields = ("condition", "then_case", "else_case")

    def __init__(self, condition: Expr, then_case: Stmt, else_case: Stmt | None = None):
        set_fields(self, condition=convert(condition), then_case=then_case, else_case=else_case)


class LetStmt(Stmt):
    """``body`` with ``var`` bound to ``value``."""

    __slots__ = ("var", "value", "body")
    _fields = ("value", "body")

    def __init__(self, var: Var, value: ExprLike, body: Stmt):
        set_fields(self, var=var, value=convert(value), body=body)


class Evaluate(Stmt):
    """Evaluate an expression for its effect (a call)."""

    __slots__ = ("value",)
    _fields = ("value",)

    def __init__(self, value: ExprLike):
        set_fields(self, value=convert(value))


def seq(*stmts: Stmt | None) -> Stmt:
    """A SeqStmt of the non-None statements, or the single statement itself."""
    items = [s for s in stmts if s is not None]
    return items[0] if len(items) == 1 else SeqStmt(items)


class PrimFunc:
    """A lowered kernel: ``params`` are the argument buffers in call order; ``body`` the loop nest."""

    __slots__ = ("name", "params", "body", "attrs")

    def __init__(self, name: str, params: Sequence[Buffer], body: Stmt, attrs: dict | None = None):
        self.name = name
        self.params = list(params)
        self.body = body
        self.attrs = dict(attrs or {})

    def __str__(self) -> str:
        from .printer import func_str

        return func_str(self)

    __repr__ = __str__
