"""Nodes are immutable; ``replace`` makes a changed copy; printing an expression or a statement
gives its text."""

import pytest

from tunecli.engine.ir import expr as E
from tunecli.engine.ir import stmt as S
from tunecli.engine.ir.node import Node


def test_nodes_are_immutable_and_replace_copies() -> None:
    x = E.Var("x", "int32")
    total = x + 1
    with pytest.raises(AttributeError, match="Add nodes are immutable"):
        total.a = x
    other = total.replace(b=E.const(2))
    assert isinstance(other, Node) and other is not total
    assert (str(total), str(other)) == ("(x + 1)", "(x + 2)")


def test_a_statement_prints_as_a_statement() -> None:
    assert str(S.Evaluate(E.const(0))).strip() == "0"


@pytest.mark.parametrize(("dtype", "low", "high"), [("int8", -128, 127), ("uint8", 0, 255), ("bool", 0, 1),
                                                    ("int32", -(1 << 31), (1 << 31) - 1)])
def test_dtype_limits(dtype: str, low: int, high: int) -> None:
    assert (E.min_value(dtype).value, E.max_value(dtype).value) == (low, high)
    assert E.min_value(dtype).dtype == dtype


def test_float_limits_are_infinite() -> None:
    assert E.min_value("float32").value == float("-inf") and E.max_value("float64").value == float("inf")
