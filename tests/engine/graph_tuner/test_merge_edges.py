"""Edges into a merge (a concatenation of convolutions with different channel counts) carry the
shape of the merge input that is transformed, so a block that divides one input's channels but not
another's makes only the impossible transforms cost ``INVALID_LAYOUT_TIME``; the graph tuners then
pick the cheapest choice whose transforms are all possible."""

from __future__ import annotations

import pytest

from tunecli import relay, te
from tunecli.autotvm.graph_tuner import DPTuner, PBQPTuner
from tunecli.engine.graph.models.init import create_workload
from tunecli.engine.graph_tuner.conv_graph import conv_graph, main_function
from tunecli.engine.graph_tuner.layout_cost import INVALID_LAYOUT_TIME
from tunecli.engine.measure.result import MeasureErrorNo, MeasureInput, MeasureResult
from tunecli.engine.task.space import ConfigEntity
from tunecli.engine.task.task import create

SHAPE = (1, 4, 16, 16)


def two_branch_net() -> object:
    """Two 3x3 convolutions of one input, with 6 and 9 output channels, concatenated."""
    data = relay.var("data", shape=SHAPE, dtype="float32")
    left = relay.nn.conv2d(data, relay.var("left_weight"), channels=6, kernel_size=(3, 3), padding=(1, 1))
    right = relay.nn.conv2d(data, relay.var("right_weight"), channels=9, kernel_size=(3, 3), padding=(1, 1))
    out = relay.concatenate([left, right], axis=1)
    mod, _ = create_workload(relay.Function(relay.analysis.free_vars(out), out))
    return mod


def record(workload: tuple, oc_split: list[int], seconds: float) -> tuple:
    """A successful record of ``workload`` whose config writes blocks of ``oc_split[1]`` channels."""
    task = create(workload[0], workload[1:], "llvm")
    config = ConfigEntity.from_json_dict({"index": -1, "code_hash": None, "entity": [
        ["tile_ic", "sp", [1, 4]], ["tile_oc", "sp", oc_split], ["tile_ow", "sp", [2, 8]],
        ["unroll_kw", "ot", False]]})
    result = MeasureResult((seconds,), MeasureErrorNo.NO_ERROR, 0.0, 0.0)
    return MeasureInput(task.target, task, config), result


def transform_record() -> tuple:
    """A measured layout transform (2048 elements in a microsecond) to infer the others' times from."""
    task = create("layout_transform", (te.placeholder((1, 8, 16, 8, 2)), "NCHW2c", "NCHW4c"), "llvm")
    return MeasureInput(task.target, task, None), MeasureResult((1e-6,), MeasureErrorNo.NO_ERROR, 0.0, 0.0)


@pytest.fixture(scope="module")
def net_and_records() -> tuple[object, list, list]:
    net = two_branch_net()
    left, right = conv_graph(main_function(net), ["data"], ["nn.conv2d"], "llvm").nodes
    # left (6 channels): blocks of 2 (fastest) or 3; right (9 channels): blocks of 3 (fastest) or 9
    lefts = [record(left.workload, [3, 2], 0.010), record(left.workload, [2, 3], 0.030)]
    rights = [record(right.workload, [3, 3], 0.012), record(right.workload, [1, 9], 0.050)]
    return net, lefts, rights


def test_a_merge_edge_carries_the_shape_of_its_producers_output(net_and_records: tuple) -> None:
    net = net_and_records[0]
    graph = conv_graph(main_function(net), ["data"], ["nn.conv2d"], "llvm")
    (edge,) = graph.edges
    assert not edge.to_input
    producer = graph.nodes[edge.src].call
    assert edge.shape == tuple(int(s) for s in producer.checked_type.shape)
    assert edge.shape[1] == 9


@pytest.mark.parametrize("tuner_class", [DPTuner, PBQPTuner])
def test_only_impossible_transforms_are_ruled_out(net_and_records: tuple, tuner_class: type) -> None:
    net, lefts, rights = net_and_records
    tuner = tuner_class(net, {"data": SHAPE}, lefts + rights, ["nn.conv2d"], "llvm", verbose=False)
    tuner.benchmark_layout_transform(layout_records=[transform_record()], infer_layout=True)
    matrix = tuner.problem.edge_costs[0, 1]  # rows: left's candidates, columns: right's
    # the right branch's 9 channels go into the left branch's layout at the concatenation:
    # into NCHW2c impossible (both right candidates), NCHW3c -> NCHW3c none, NCHW9c -> NCHW3c possible
    assert matrix[0, 0] == INVALID_LAYOUT_TIME and matrix[0, 1] == INVALID_LAYOUT_TIME
    assert matrix[1, 0] == 0.0
    assert 0.0 < matrix[1, 1] < 1.0
    tuner.run()
    chosen = [inp.config for inp, _ in tuner.get_optimal_records()]
    assert chosen == [lefts[1][0].config, rights[0][0].config]
