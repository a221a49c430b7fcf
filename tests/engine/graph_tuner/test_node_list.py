"""TVM's node-list view of a graph (``autotvm.graph_tuner.utils``): nodes in post order with the
parameters first, data inputs looked through tuples, merges, nearest tuned ancestors and the
in/out maps between tuned and merging nodes."""

from __future__ import annotations

from tunecli import relay
from tunecli.engine.graph_tuner.node_list import (
    OPT_OUT_OP,
    bind_inputs,
    expr2graph,
    get_direct_ancestor,
    get_in_nodes,
    get_out_nodes,
    has_multiple_inputs,
    replace_device_with_tracing,
)

CONV = [relay.op.get("nn.conv2d")]
SHAPES = {"x": (1, 8, 10, 10), "k1": (8, 8, 3, 3), "k2": (8, 8, 1, 1)}


def listed(out: relay.Expr, shapes: dict = SHAPES) -> list[dict]:
    fn = bind_inputs(relay.Function(relay.analysis.free_vars(out), out), shapes)
    nodes: list[dict] = []
    expr2graph(fn, CONV, {}, nodes, "llvm")
    return nodes


def residual() -> relay.Expr:
    """x -> conv(k1) -> add(x) -> relu -> conv(k2)"""
    x = relay.var("x")
    first = relay.nn.conv2d(x, relay.var("k1"), padding=(1, 1))
    return relay.nn.conv2d(relay.nn.relu(relay.add(first, x)), relay.var("k2"))


def test_parameters_come_first_then_each_node_after_its_inputs() -> None:
    nodes = listed(residual())
    assert [n["name"] for n in nodes[:3]] == ["x", "k1", "k2"]
    ops = [n["op"].name if n["op"] else None for n in nodes]
    assert ops == [None, None, None, "nn.conv2d", "add", "nn.relu", "nn.conv2d"]
    assert nodes[4]["inputs"] == [[3, 0, 0], [0, 0, 0]]
    assert [tuple(t.shape) for t in nodes[3]["types"]] == [(1, 8, 10, 10)]
    assert nodes[3]["topi_op"] == ["conv2d_NCHWc.x86"] and nodes[3]["workloads"][0][0] == "conv2d_NCHWc.x86"


def test_a_concatenation_reads_through_its_tuple_and_constants_are_named() -> None:
    x = relay.var("x")
    left = relay.nn.conv2d(x, relay.var("k1"), padding=(1, 1))
    out = relay.concatenate([left, x * relay.const(2.0)], axis=1)
    nodes = listed(out)
    tup, cat = nodes[-2], nodes[-1]
    assert tup["op"] is None and cat["op"].name == "concatenate"
    assert cat["inputs"] == tup["inputs"] == [[2, 0, 0], [4, 0, 0]]
    assert nodes[3]["name"] == "Constant_3"
    assert has_multiple_inputs(nodes, len(nodes) - 1, ["x"], OPT_OUT_OP)


def test_weights_and_constants_are_not_data_inputs() -> None:
    nodes = listed(residual())
    assert not has_multiple_inputs(nodes, 3, ["x"])       # conv: x and a weight
    assert has_multiple_inputs(nodes, 4, ["x"])           # add: conv and x
    assert not has_multiple_inputs(nodes, 5, ["x"])       # relu


def test_the_nearest_tuned_or_merging_ancestors() -> None:
    nodes = listed(residual())
    memo: dict = {}
    assert get_direct_ancestor(nodes, memo, CONV, 6, ["x"]) == [4]   # through the relu
    assert get_direct_ancestor(nodes, memo, CONV, 4, ["x"]) == [3, 0]
    assert memo[6] == [4]


def test_in_nodes_and_their_reverse() -> None:
    nodes = listed(residual())
    in_nodes = get_in_nodes(nodes, CONV, ["x"])
    assert in_nodes == {3: [0], 4: [3, 0], 6: [4]}
    assert get_out_nodes(in_nodes) == {3: [4], 4: [6], 6: [], 0: [3, 4]}


def test_a_merge_of_graph_inputs_only_is_not_an_in_node() -> None:
    x, y = relay.var("x"), relay.var("y")
    out = relay.nn.conv2d(relay.add(x, y), relay.var("k2"))
    nodes = listed(out, {"x": (1, 8, 4, 4), "y": (1, 8, 4, 4), "k2": (8, 8, 1, 1)})
    assert get_in_nodes(nodes, CONV, ["x", "y"]) == {4: [3]}


def test_the_tracing_device_replaces_or_joins_the_target_options() -> None:
    assert replace_device_with_tracing("llvm") == "llvm -device=tracing"
    with_options = replace_device_with_tracing("llvm -device=arm_cpu -mattr=+neon")
    assert with_options == "llvm -device=tracing -mattr=+neon"
    assert replace_device_with_tracing("cuda -device=a b") == "cuda -device=tracing"


def test_every_node_of_the_synthetic_network_is_listed() -> None:
    mod, _ = relay.testing.synthetic.get_workload()
    counted: list = []
    relay.analysis.post_order_visit(mod["main"], lambda n: counted.append(n))
    nodes: list[dict] = []
    expr2graph(mod["main"], CONV, {}, nodes, "llvm")
    assert len(nodes) == len(counted) - 1  # all but the function itself
    assert sum(1 for n in nodes if n["op"] is not None and n["op"].name == "nn.conv2d") == 2
