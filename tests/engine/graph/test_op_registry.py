"""The operator registry and attribute records."""

from __future__ import annotations

import pytest

from tunecli.engine import graph as g
from tunecli.engine.graph.op_registry import NoAttrs, Op, OpPattern, OpRegistry
from tunecli.engine.graph.ops.conv import make_conv2d_attrs
from tunecli.engine.graph.ops.define import same_type_relation
from tunecli.errors import GraphError


def test_registry_names_each_operator_once() -> None:
    registry = OpRegistry()
    op = Op("t.x", ("data",), NoAttrs, same_type_relation, lambda attrs, x: x, OpPattern.ELEMWISE)
    assert registry.register(op) is op and registry.get("t.x") is op and "t.x" in registry
    with pytest.raises(GraphError, match="registered twice"):
        registry.register(op)
    with pytest.raises(GraphError, match="unknown operator 't.y'; known: t.x"):
        registry.get("t.y")


def test_op_attributes() -> None:
    op = g.OPS.get("nn.dense")
    assert op.num_inputs == 2 and op.arg_names == ("data", "weight") and op.strategy_op == "dense"
    assert op.get_attr("TOpPattern") == 4
    with pytest.raises(GraphError, match="nn.dense has no attribute 'TTestHook'"):
        op.get_attr("TTestHook")


def test_later_layers_attach_attributes_once() -> None:
    registry = OpRegistry()
    op = registry.register(
        Op("t.x", ("data",), NoAttrs, same_type_relation, lambda attrs, x: x, OpPattern.ELEMWISE)
    )
    registry.set_attr("t.x", "FCompute", len)
    assert registry.get_attr("t.x", "FCompute") is len and registry.has_attr("t.x", "FCompute")
    assert not registry.has_attr("t.x", "FOther") and op.get_attr("TOpPattern") == 0
    with pytest.raises(GraphError, match="attribute 'FCompute' is set twice"):
        registry.set_attr("t.x", "FCompute", len)
    with pytest.raises(GraphError, match="unknown operator 't.y'"):
        registry.set_attr("t.y", "FCompute", len)
    with pytest.raises(GraphError, match=r"no attribute 'FOther' \(operators with it: none\)"):
        registry.get_attr("t.x", "FOther")


def test_attrs_read_like_tvms() -> None:
    attrs = make_conv2d_attrs(strides=2, padding=1, channels=8, kernel_size=3)
    assert attrs["strides"] == (2, 2) and attrs.get_int_tuple("padding") == (1, 1)
    assert attrs.get_str("data_layout") == "NCHW" and attrs.get_int("groups") == 1
    assert attrs.keys()[:3] == ["strides", "padding", "dilation"]
    assert attrs.non_default() == {"strides": (2, 2), "padding": (1, 1), "channels": 8, "kernel_size": (3, 3)}
    with pytest.raises(KeyError, match="no attribute 'nope'"):
        attrs["nope"]
    with pytest.raises(AttributeError):
        attrs.groups = 2  # type: ignore[misc]
