"""Evaluate one expression with the interpreter, inputs by variable name (shared by the op tests)."""

from __future__ import annotations

from typing import Any

from tunecli.engine import graph as g


def run(expr: g.Expr, **inputs: Any) -> Any:
    """The value of ``expr`` with its free variables bound by name."""
    fn = g.Function(g.free_vars(expr), expr)
    return g.evaluate(fn, inputs=inputs)
