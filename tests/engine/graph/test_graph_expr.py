"""Graph nodes: construction, identity, immutability, tuple access, free variables, mutation."""

from __future__ import annotations

import numpy as np
import pytest

from tunecli.engine import graph as g
from tunecli.engine.graph.ops import nn, unary
from tunecli.errors import GraphError


def test_nodes_are_compared_by_identity_and_immutable() -> None:
    a, b = g.var("x", shape=(2,)), g.var("x", shape=(2,))
    assert a != b and a == a and len({a, b, a}) == 2
    with pytest.raises(GraphError, match="immutable"):
        a.name_hint = "y"


def test_var_forms_and_const_dtypes() -> None:
    assert g.var("x", shape=(1, 3)).type_annotation == g.TensorType((1, 3), "float32")
    assert g.var("s", "int32").type_annotation == g.TensorType((), "int32")
    assert g.var("w").type_annotation is None
    assert g.const(1.0).data.dtype == np.float32 and g.const(2).data.dtype == np.int32
    assert g.const([1, 2], "int64").data.dtype == np.int64
    assert g.const(np.zeros(2)).data.dtype == np.float32 and g.const(np.int64(3)).data.dtype == np.int32
    assert g.const(np.zeros(2, "float16")).data.dtype == np.float16
    c = g.const(np.ones(3, "float32"))
    with pytest.raises(ValueError):
        c.data[0] = 2.0


def test_operators_build_broadcasting_calls() -> None:
    x = g.var("x", shape=(2, 3))
    y = (x + 1.0) * x - 2.0
    assert isinstance(y, g.Call) and y.op.name == "subtract"
    assert y.args[0].op.name == "multiply" and y.args[0].args[0].op.name == "add"
    assert (1.0 / x).op.name == "divide"


def test_multi_output_calls_index_and_unpack() -> None:
    x = g.var("x", shape=(1, 2, 4, 4))
    bn = nn.batch_norm(x, g.var("g"), g.var("b"), g.var("m"), g.var("v"))
    out, mean, var = bn
    assert isinstance(out, g.TupleGetItem) and out.index == 0 and var.index == 2
    assert len(bn) == 3 and bn.astuple() is out.tuple_value
    with pytest.raises(IndexError):
        bn[3]
    with pytest.raises(GraphError, match="cannot be unpacked"):
        list(x)


def test_call_checks_arity_and_argument_kinds() -> None:
    with pytest.raises(GraphError, match="nn.relu: takes 1 arguments"):
        g.Call(g.OPS.get("nn.relu"), [g.var("a"), g.var("b")])
    with pytest.raises(GraphError, match="argument 0 must be a graph expression"):
        g.Call(g.OPS.get("nn.relu"), [np.ones(2)])
    with pytest.raises(GraphError, match="unknown operator 'nn.nope'"):
        g.OPS.get("nn.nope")


def test_function_attrs_are_read_only_and_copied_by_with_attr() -> None:
    x = g.var("x", shape=(2,))
    fn = g.Function([x], unary.relu(x))
    fused = fn.with_attr("Primitive", 1)
    assert dict(fused.attrs) == {"Primitive": 1} and dict(fn.attrs) == {}
    with pytest.raises(TypeError):
        fused.attrs["Primitive"] = 2  # type: ignore[index]
    with pytest.raises(GraphError, match="listed twice"):
        g.Function([x, x], x)
