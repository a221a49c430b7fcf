"""Values of structurally equal expressions emitted once within a statement.

Unrolled loops repeat subexpressions as distinct but equal trees (a Winograd transform's terms, the
index arithmetic of neighbouring elements).  :class:`SharedValues` lets an emitter reuse the LLVM
value of an equal expression emitted earlier *in the same basic block, under the same vector mask*
(the value dominates the use), as long as no variable was rebound (the emitter clears it then).  A
value whose expression reads memory is shared only within one statement (the emitter forgets those
at each statement: a store may separate the reads); index arithmetic of loop variables is shared by
the statements of a block (an unrolled loop's copies compute their common base address once).

Structure is interned bottom-up to small integers (:meth:`SharedValues.structure`), so each node
is keyed once: variables, buffers and other non-node attributes by identity, constants by type,
dtype and ``repr`` of their value (``0.0`` and ``-0.0`` differ).
"""

from __future__ import annotations

from llvmlite import ir

from tunecli.engine.ir import expr as E

#: Expressions never shared: leaves (cheaper to emit than to key), calls (may have effects) and
#: lets (bind a variable).
NOT_SHARED = (E.IntImm, E.FloatImm, E.Var, E.Call, E.Let)
_EXTRA = ("name", "lanes", "buffer", "tensor", "combiner")
#: Expressions that read memory (or may: calls), whose values a store may change.
READS = (E.BufferLoad, E.Call)


class SharedValues:
    """The emitted values of one emitter, by (block, structure, mask): those reading memory for the
    current statement, the others until a variable is bound."""

    def __init__(self) -> None:
        self._values: dict[tuple[int, int, int], tuple[ir.Value, ir.Block, ir.Value | None]] = {}
        # id(node) -> (node kept alive, structure); a node is an expression or any field value of one
        self._ids: dict[int, tuple[object, int]] = {}
        self._structures: dict[tuple, int] = {}
        self._reads: list[bool] = []  # per structure: True when the expression reads memory
        self._read_values: dict[tuple[int, int, int], tuple[ir.Value, ir.Block, ir.Value | None]] = {}

    def clear(self) -> None:
        """Forget the values (a variable is bound or unbound)."""
        self._values.clear()
        self._read_values.clear()

    def forget_reads(self) -> None:
        """Forget the values of expressions that read memory (a statement starts)."""
        self._read_values.clear()

    def get(self, e: E.Expr, block: ir.Block, mask: ir.Value | None) -> ir.Value | None:
        """The value of an expression equal to ``e`` emitted in ``block`` under ``mask``, or None."""
        number = self.structure(e)
        hit = (self._read_values if self._reads[number] else self._values).get((id(block), number, id(mask)))
        return hit[0] if hit is not None else None

    def put(self, e: E.Expr, block: ir.Block, mask: ir.Value | None, value: ir.Value) -> None:
        """Remember ``value`` as ``e``'s in ``block`` (where its emission ended) under ``mask``."""
        number = self.structure(e)
        table = self._read_values if self._reads[number] else self._values
        table[(id(block), number, id(mask))] = (value, block, mask)

    def structure(self, node: object) -> int:
        """The interned structure of ``node`` (equal trees get equal numbers)."""
        hit = self._ids.get(id(node))
        if hit is not None:
            return hit[1]
        reads = False
        if isinstance(node, tuple):
            parts: tuple = ("tuple", *(self.structure(x) for x in node))
            reads = any(self._reads[p] for p in parts[1:])
        elif isinstance(node, E.Var):
            parts = ("var", id(node))
        elif isinstance(node, E.ConstExpr):
            parts = (type(node), node.dtype, repr(node.value))
        elif not hasattr(node, "_fields"):
            parts = ("object", id(node))
        else:
            extra = tuple((a, _attribute(getattr(node, a))) for a in _EXTRA
                          if a not in node._fields and hasattr(node, a))
            children = tuple(self.structure(getattr(node, f)) for f in node._fields)
            parts = (type(node), node.dtype, extra, *children)
            reads = isinstance(node, READS) or any(self._reads[c] for c in children)
        number = self._structures.setdefault(parts, len(self._structures))
        if number == len(self._reads):
            self._reads.append(reads)
        self._ids[id(node)] = (node, number)
        return number


def _attribute(value: object) -> str | int | tuple[str, int]:
    """A name or lane count by value, anything else (a buffer, a tensor) by identity."""
    return value if isinstance(value, (str, int)) else ("object", id(value))
