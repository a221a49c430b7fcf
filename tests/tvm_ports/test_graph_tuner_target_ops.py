"""TVM 0.6's graph tuner scripts name the tuned operators by their constructor functions,
``target_op = [relay.nn.conv2d]`` (later ones ``[relay.op.get("nn.conv2d")]``): the graph
tuner's view of the network is the same either way."""

from __future__ import annotations

import pytest

from tunecli import relay, topi
from tunecli.autotvm.graph_tuner.utils import expr2graph
from tunecli.engine.graph_tuner.conv_graph import conv_graph, main_function
from tunecli.errors import GraphError


def two_convolutions() -> relay.Function:
    data = relay.var("data", shape=(1, 8, 8, 8))
    c1 = relay.nn.conv2d(data, relay.var("w1"), channels=16, kernel_size=(3, 3), padding=(1, 1))
    c2 = relay.nn.conv2d(relay.nn.relu(c1), relay.var("w2"), channels=8, kernel_size=(1, 1))
    return relay.Function(relay.analysis.free_vars(c2), c2)


def test_constructor_functions_as_target_ops():
    by_function = conv_graph(main_function(two_convolutions()), ["data"], [relay.nn.conv2d], "llvm")
    by_op = conv_graph(main_function(two_convolutions()), ["data"], [relay.op.get("nn.conv2d")], "llvm")
    assert len(by_function.nodes) == 2
    assert [n.workload for n in by_function.nodes] == [n.workload for n in by_op.nodes]
    assert by_function.edges == by_op.edges

    nodes_by_function: list = []
    expr2graph(two_convolutions(), [relay.nn.conv2d], {}, nodes_by_function)
    nodes_by_name: list = []
    expr2graph(two_convolutions(), ["nn.conv2d"], {}, nodes_by_name)
    assert [n["op"] for n in nodes_by_function] == [n["op"] for n in nodes_by_name]
    assert [n.get("workloads") for n in nodes_by_function] == [n.get("workloads") for n in nodes_by_name]
    assert sum(1 for n in nodes_by_function if n.get("workloads", [None])[0]) == 2


def test_a_function_that_builds_no_operator_is_refused():
    with pytest.raises(GraphError, match="not an operator constructor"):
        conv_graph(main_function(two_convolutions()), ["data"], [topi.nn.conv2d], "llvm")
