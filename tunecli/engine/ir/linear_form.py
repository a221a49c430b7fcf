"""Integer sums in a canonical linear form, ``sum(coef * term) + const``, with terms told apart by
their structure (``skey``: variables and buffers by identity), so equal terms combine."""

from __future__ import annotations

from collections.abc import Hashable

from . import expr as E
from .node import Node


def skey(e: object) -> Hashable:
    """A hashable structural key of an expression (variables and buffers by identity)."""
    if isinstance(e, E.Var):
        return ("v", id(e))
    if isinstance(e, E.ConstExpr):
        return ("c", e.value, e.dtype)
    if isinstance(e, tuple):
        return tuple(skey(x) for x in e)
    if not isinstance(e, Node):
        return ("o", id(e))
    extra: tuple = ()
    for attr in ("name", "lanes", "buffer", "tensor", "combiner"):
        if hasattr(e, attr) and attr not in e._fields:
            val = getattr(e, attr)
            extra += ((attr, val if isinstance(val, (str, int)) else id(val)),)
    return (type(e).__name__, e.dtype, extra, tuple(skey(getattr(e, f)) for f in e._fields))


class Linear:
    """``sum(coef * term) + const`` over integer terms, keyed structurally."""

    __slots__ = ("terms", "const", "dtype")

    def __init__(self, dtype: str):
        self.terms: dict[Hashable, list] = {}
        self.const = 0
        self.dtype = dtype

    def add_term(self, term: E.Expr, coef: int) -> None:
        """Add ``coef * term``."""
        if coef == 0:
            return
        k = skey(term)
        if k in self.terms:
            self.terms[k][1] += coef
        else:
            self.terms[k] = [term, coef]

    def add(self, other: Linear, scale: int = 1) -> None:
        """Add ``scale * other``."""
        for term, coef in other.terms.values():
            self.add_term(term, coef * scale)
        self.const += other.const * scale

    def scaled(self, c: int) -> Linear:
        """A copy multiplied by ``c``."""
        out = Linear(self.dtype)
        out.add(self, c)
        return out

    def items(self) -> list[tuple[E.Expr, int]]:
        """The (term, coefficient) pairs with non-zero coefficients."""
        return [(t, c) for t, c in self.terms.values() if c != 0]
