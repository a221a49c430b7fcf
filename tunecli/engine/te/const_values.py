"""Constant integers out of shapes and expressions (TVM's ``topi.utils.get_const_int`` and
``get_const_tuple``)."""

from __future__ import annotations

from collections.abc import Iterable

from tunecli.engine.ir import expr as E
from tunecli.engine.ir.simplify import simplify
from tunecli.errors import ExprError


def get_const_int(value: E.ExprLike) -> int:
    """``value`` (an int, or an expression that simplifies to an integer constant) as an int."""
    if isinstance(value, bool):
        raise ExprError(f"get_const_int: expected an integer, got {value!r}")
    if isinstance(value, int):
        return value
    try:
        folded = simplify(E.convert(value))
    except Exception as exc:
        raise ExprError(f"get_const_int: expected an integer, got {value!r}") from exc
    if not isinstance(folded, E.IntImm):
        raise ExprError(f"get_const_int: {value!r} is not a constant integer")
    return int(folded.value)


def get_const_tuple(values: Iterable[E.ExprLike]) -> tuple[int, ...]:
    """A shape (or any sequence of constant integers) as a tuple of ints."""
    return tuple(get_const_int(v) for v in values)


__all__ = ["get_const_int", "get_const_tuple"]
