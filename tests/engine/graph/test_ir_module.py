"""IRModule: main, from_expr, printing."""

from __future__ import annotations

import pytest

from tunecli.engine import graph as g
from tunecli.engine.graph.ops import unary
from tunecli.errors import GraphError


def test_module_main_and_from_expr() -> None:
    x = g.var("x", shape=(2,))
    mod = g.IRModule.from_expr(unary.relu(x))
    assert mod["main"].params == (x,) and "main" in mod
    with pytest.raises(GraphError, match="no function 'other'"):
        mod["other"]


def test_functions_by_name_and_errors() -> None:
    x = g.var("x", shape=(2,))
    mod = g.IRModule({"main": g.Function([x], x)})
    mod["helper"] = g.Function([x], unary.relu(x))
    assert list(mod) == ["main", "helper"] and len(mod) == 2
    with pytest.raises(GraphError, match="expected a Function"):
        mod["bad"] = x  # type: ignore[assignment]
    with pytest.raises(GraphError, match="expected a graph expression"):
        g.IRModule.from_expr(3)  # type: ignore[arg-type]
    assert str(mod).startswith('#[version = "0.0.5"]\ndef @main(%x: Tensor[(2), float32]) {')
    assert "def @helper(" in str(mod)
