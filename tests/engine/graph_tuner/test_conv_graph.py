"""The graph tuner's view of a network: its tunable convolutions (TVM's workloads) and the
edges where a layout transform may be needed (TVM's traverse_graph)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tunecli import relay
from tunecli.engine.graph.op_strategy import implementation
from tunecli.engine.graph_tuner.conv_graph import LayoutEdge, conv_graph, conv_workload, main_function
from tunecli.engine.log.record import load_from_file
from tunecli.engine.target import Target
from tunecli.errors import GraphError

TOPHUB_X86 = Path(__file__).resolve().parents[3] / ".." / "shared" / "reference" / "tophub" / "llvm_v0.04.log"
needs_tophub = pytest.mark.skipif(not TOPHUB_X86.is_file(), reason=f"real TVM logs not found at {TOPHUB_X86}")


def residual_net() -> relay.Function:
    """conv -> relu -> conv, plus a 1x1 shortcut from the input, added, pooled, a 1x1 conv."""
    data = relay.var("data", shape=(1, 16, 8, 8))
    c1 = relay.nn.conv2d(data, relay.var("w1"), channels=32, kernel_size=(3, 3), padding=(1, 1))
    c2 = relay.nn.conv2d(relay.nn.relu(c1), relay.var("w2"), channels=32, kernel_size=(3, 3), padding=(1, 1))
    shortcut = relay.nn.conv2d(data, relay.var("w3"), channels=32, kernel_size=(1, 1))
    merged = relay.nn.relu(relay.add(c2, shortcut))
    pooled = relay.nn.max_pool2d(merged, pool_size=(2, 2), strides=(2, 2))
    c4 = relay.nn.conv2d(pooled, relay.var("w4"), channels=16, kernel_size=(1, 1))
    return relay.Function(relay.analysis.free_vars(c4), c4)


def test_residual_block_nodes_and_edges() -> None:
    g = conv_graph(main_function(residual_net()), ["data"], [relay.op.get("nn.conv2d")], "llvm")
    shapes = [n.workload[1][1] + n.workload[2][1] for n in g.nodes]
    assert shapes == [(1, 16, 8, 8, 32, 16, 3, 3), (1, 32, 8, 8, 32, 32, 3, 3),
                      (1, 16, 8, 8, 32, 16, 1, 1), (1, 32, 4, 4, 16, 32, 1, 1)]
    assert all(n.task_name == "conv2d_NCHWc.x86" for n in g.nodes)
    # No edge from the graph input (a boundary); the shortcut goes into the add, which takes the
    # layout of its first input (conv 1's output); conv 3 reads the pooled tensor.
    assert set(g.edges) == {LayoutEdge(0, 1, (1, 32, 8, 8), True), LayoutEdge(2, 1, (1, 32, 8, 8), False),
                            LayoutEdge(1, 3, (1, 32, 4, 4), True)}



def test_a_conv_has_the_workload_of_its_strategy_row() -> None:
    g = conv_graph(main_function(residual_net()), ["data"], ["nn.conv2d"], "llvm")
    target = Target("llvm")
    for node in g.nodes:
        impl = implementation(node.call, target)
        assert conv_workload(node.call, target) == (node.task_name, impl.workload)


def test_no_convs_where_the_target_selects_no_nchwc_template() -> None:
    fn = main_function(residual_net())
    assert conv_graph(fn, ["data"], ["nn.conv2d"], "cuda").nodes == ()


def test_concatenate_takes_its_first_input_layout() -> None:
    data = relay.var("data", shape=(1, 8, 6, 6))
    a = relay.nn.conv2d(data, relay.var("wa"), channels=8, kernel_size=(1, 1))
    b = relay.nn.conv2d(data, relay.var("wb"), channels=8, kernel_size=(3, 3), padding=(1, 1))
    c = relay.nn.conv2d(relay.concatenate([a, b], axis=1), relay.var("wc"), channels=4, kernel_size=(1, 1))
    fn = main_function(relay.Function(relay.analysis.free_vars(c), c))
    g = conv_graph(fn, ["data"], ["nn.conv2d"], "llvm")
    assert len(g.nodes) == 3
    assert set(g.edges) == {LayoutEdge(1, 0, (1, 8, 6, 6), False), LayoutEdge(0, 2, (1, 16, 6, 6), True)}


def test_layout_fixed_ops_are_boundaries() -> None:
    data = relay.var("data", shape=(1, 4, 4, 4))
    a = relay.nn.conv2d(data, relay.var("wa"), channels=4, kernel_size=(1, 1))
    flat = relay.reshape(relay.nn.batch_flatten(a), (1, 4, 4, 4))
    b = relay.nn.conv2d(flat, relay.var("wb"), channels=4, kernel_size=(1, 1))
    fn = main_function(relay.Function(relay.analysis.free_vars(b), b))
    g = conv_graph(fn, ["data"], ["nn.conv2d"], "llvm")
    assert len(g.nodes) == 2 and g.edges == ()


@needs_tophub
def test_resnet18_convolutions_are_tophub_workloads() -> None:
    mod, _ = relay.testing.resnet.get_workload(num_layers=18, batch_size=1)
    g = conv_graph(main_function(mod), ["data"], [relay.op.get("nn.conv2d")], "llvm")
    logged = {inp.task.workload for inp, _ in load_from_file(TOPHUB_X86)}
    assert len(g.nodes) == 21 and {n.workload for n in g.nodes} <= logged
    assert len({n.workload for n in g.nodes}) == 12
    # Every residual add follows its block's last conv: one merge edge from each shortcut.
    assert sum(not e.to_input for e in g.edges) == 8
    assert all(e.src < e.dst for e in g.edges if e.to_input)


def test_mobilenet_depthwise_convolutions() -> None:
    mod, _ = relay.testing.mobilenet.get_workload(batch_size=1, image_shape=(3, 32, 32))
    g = conv_graph(main_function(mod), ["data"], ["nn.conv2d"], "llvm")
    names = {n.task_name for n in g.nodes}
    assert names == {"conv2d_NCHWc.x86", "depthwise_conv2d_NCHWc.x86"}
    assert len(g.edges) == len(g.nodes) - 1  # a chain


def test_input_shapes_must_name_graph_inputs() -> None:
    with pytest.raises(GraphError, match="not parameters of the graph"):
        conv_graph(main_function(residual_net()), ["image"], ["nn.conv2d"], "llvm")


def test_only_convolutions_are_target_ops() -> None:
    with pytest.raises(GraphError, match=r"target_ops \['nn.dense'\] cannot be tuned"):
        conv_graph(main_function(residual_net()), ["data"], ["nn.conv2d", relay.op.get("nn.dense")], "llvm")
