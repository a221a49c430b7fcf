"""What the graph tuner counts is what the build runs: on an inverted residual block (MobileNet
v2's: a 1x1 expanding convolution, a depthwise one, a 1x1 projecting one and the residual add),
for every choice of candidates the layout transforms of the tuner's cost problem are the
``layout_transform`` calls ``relay.build``'s passes put between the convolutions (but one the
build shares between two consumers, which the pairwise problem counts twice), and their
modelled cost is the sum of those transforms' measured times; convolutions measured in their
default layouts join the candidates, a choice of them all needs no transform, and re-timed
candidates keep their configs."""

from __future__ import annotations

import itertools
from collections import Counter

import numpy as np
import pytest

from tunecli import relay
from tunecli.autotvm import apply_graph_best
from tunecli.autotvm.graph_tuner import DPTuner
from tunecli.engine import graph as g
from tunecli.engine.graph.build_module import optimize
from tunecli.engine.graph.passes import InferType, PassContext
from tunecli.engine.graph_tuner.conv_graph import conv_graph, main_function
from tunecli.engine.graph_tuner.default_layouts import default_layout_configs
from tunecli.engine.log.record import encode
from tunecli.engine.measure.batch import create_measure_batch, measure_option
from tunecli.engine.measure.builder import LocalBuilder
from tunecli.engine.measure.local_runner import LocalRunner
from tunecli.engine.measure.result import MeasureErrorNo, MeasureInput
from tunecli.engine.target import Target
from tunecli.engine.task.fallback_config import FallbackConfigEntity
from tunecli.engine.task.task import create

TARGET = "llvm"
SHAPE = (1, 8, 8, 8)
#: Block pairs (tile_ic, tile_oc) of each convolution's records: two per convolution, so that
#: neighbours agree in some choices and not in others.
PAIRS = {"a": [(4, 8), (8, 16)], "e": [(8, 16), (16, 8)], "d": [(16, 16), (8, 8)],
         "p": [(16, 8), (8, 16)], "z": [(16, 4), (8, 8)]}


def inverted_residual_net() -> relay.Function:
    """conv a (1x1) -> relu -> [expand e (1x1), relu, depthwise d (3x3), relu, project p (1x1)]
    + the block input -> conv z (1x1)."""
    data = relay.var("data", shape=SHAPE)
    x = relay.nn.relu(relay.nn.conv2d(data, relay.var("wa"), channels=16, kernel_size=(1, 1)))
    e = relay.nn.relu(relay.nn.conv2d(x, relay.var("we"), channels=32, kernel_size=(1, 1)))
    d = relay.nn.relu(relay.nn.conv2d(e, relay.var("wd"), channels=32, kernel_size=(3, 3), padding=(1, 1),
                                      groups=32))
    p = relay.nn.conv2d(d, relay.var("wp"), channels=16, kernel_size=(1, 1))
    z = relay.nn.conv2d(relay.add(p, x), relay.var("wz"), channels=8, kernel_size=(1, 1))
    return relay.Function(relay.analysis.free_vars(z), z)


def runner_option() -> dict:
    return measure_option(LocalBuilder(n_parallel=1), LocalRunner(number=5, repeat=1))


@pytest.fixture(scope="module")
def records() -> list:
    """Each convolution's configs at its two block pairs, built and measured."""
    graph = conv_graph(main_function(inverted_residual_net()), ["data"], ["nn.conv2d"], TARGET)
    out = []
    for name, node in zip(PAIRS, graph.nodes, strict=True):
        task = create(node.task_name, node.workload[1:], TARGET)
        space = [task.config_space.get(i) for i in range(len(task.config_space))]
        configs = [next(cfg for cfg in space if (cfg["tile_ic"].size[-1], cfg["tile_oc"].size[-1]) == pair)
                   for pair in PAIRS[name]]
        inputs = [MeasureInput(task.target, task, cfg) for cfg in configs]
        out += list(zip(inputs, create_measure_batch(task, runner_option())(inputs), strict=True))
    assert all(res.error_no == MeasureErrorNo.NO_ERROR for _, res in out)
    return out


@pytest.fixture(scope="module")
def tuner(records: list) -> DPTuner:
    tuner = DPTuner(inverted_residual_net(), {"data": SHAPE}, records, ["nn.conv2d"], TARGET, verbose=False)
    tuner.benchmark_layout_transform(min_exec_num=5)
    return tuner


def built_transforms(chosen: list, tmp_path: object) -> list[tuple]:
    """The ``layout_transform`` workloads between convolutions of the graph built with ``chosen``
    (one record per convolution, graph order); those from the NCHW input and to the NCHW output
    are the graph's boundaries, which the tuner does not count."""
    path = tmp_path / "choice.log"  # type: ignore[operator]
    path.write_text("".join(encode(inp, res) + "\n" for inp, res in chosen))
    mod = InferType()(g.IRModule.from_expr(inverted_residual_net()))
    params = {p.name_hint: np.zeros(p.checked_type.shape, "float32")
              for p in mod["main"].params[1:]}
    with apply_graph_best(str(path)), PassContext(opt_level=3, disabled_pass=["FuseOps"]):
        fn = optimize(mod, params, Target(TARGET))["main"]
    found = []
    for n in g.post_order(fn):
        if isinstance(n, g.Call) and isinstance(n.op, g.Op) and n.op.name == "layout_transform" \
                and "NCHW" not in (n.attrs.src_layout, n.attrs.dst_layout):
            shape = tuple(int(s) for s in n.args[0].checked_type.shape)
            found.append(("layout_transform", ("TENSOR", shape, "float32"), n.attrs.src_layout,
                          n.attrs.dst_layout))
    return found


def test_every_choice_models_the_transforms_the_build_runs(tuner: DPTuner, tmp_path: object) -> None:
    graph, problem = tuner.conv_graph, tuner.problem
    assert [n.task_name for n in graph.nodes] == ["conv2d_NCHWc.x86", "conv2d_NCHWc.x86",
                                                  "depthwise_conv2d_NCHWc.x86", "conv2d_NCHWc.x86",
                                                  "conv2d_NCHWc.x86"]
    perf = tuner.layout_transform_perf_records
    seen = Counter()
    for choice in itertools.product(*(range(len(c)) for c in tuner.candidates)):
        chosen = [cands[c] for cands, c in zip(tuner.candidates, choice, strict=True)]
        built = built_transforms(chosen, tmp_path)
        modelled = [w for e, edge in enumerate(graph.edges)
                    if (w := tuner._transform_workload(e, choice[edge.src], choice[edge.dst]))]
        kernels = sum(res.mean_cost for _, res in chosen)
        assert problem.total(choice) - kernels == pytest.approx(sum(perf[w][1].mean_cost for w in modelled))
        if Counter(modelled) == Counter(built):
            seen["equal"] += 1
            seen["with transforms" if built else "without"] += 1
        else:
            # The block input feeds the expanding convolution and the residual add: where both
            # want it in one layout, the build transforms it once for both, and the pairwise
            # cost problem (TVM's) counts that transform once per consumer.
            extra = Counter(modelled) - Counter(built)
            assert set(modelled) == set(built)
            assert all(built.count(w) == 1 and modelled.count(w) == 2 for w in extra)
            e_in, p_out = (tuner._layouts[1][choice[1]][0], tuner._layouts[3][choice[3]][1])
            assert e_in == p_out != tuner._layouts[0][choice[0]][1]
            seen["shared"] += 1
    assert seen["with transforms"] and seen["without"] and seen["equal"] > seen["shared"]


def test_default_layout_configs_are_the_fallback_and_the_records_knobs_reblocked(records: list) -> None:
    inp = records[2][0]  # conv e's first record
    task = create(inp.task.name, inp.task.workload[1:], TARGET)
    fallback = FallbackConfigEntity()
    task.instantiate(fallback)
    configs = default_layout_configs(task, [inp.config])
    assert [str(c) for c in configs[:1]] == [str(task.config_space.get(configs[0].index))]
    for cfg in configs:
        assert [cfg[k].size[-1] for k in ("tile_ic", "tile_oc")] == \
               [fallback[k].size[-1] for k in ("tile_ic", "tile_oc")]
    assert configs[0]["tile_ow"].size[-1] == fallback["tile_ow"].size[-1]
    if len(configs) > 1:
        assert configs[1]["tile_ow"].size[-1] == inp.config["tile_ow"].size[-1]
        assert configs[1]["tile_oh"].val == inp.config["tile_oh"].val


def test_default_layout_candidates_give_a_choice_without_transforms(records: list, tuner: DPTuner,
                                                                     tmp_path: object) -> None:
    with_defaults = DPTuner(inverted_residual_net(), {"data": SHAPE}, records, ["nn.conv2d"], TARGET,
                            max_sch_num=1, verbose=False)
    with_defaults.benchmark_default_layouts(runner_option())
    defaults = []
    for node, cands in zip(with_defaults.conv_graph.nodes, with_defaults.candidates, strict=True):
        task = create(node.task_name, node.workload[1:], TARGET)
        fallback = FallbackConfigEntity()
        task.instantiate(fallback)
        blocks = [fallback[k].size[-1] for k in ("tile_ic", "tile_oc")]
        costs = [res.mean_cost for _, res in cands]
        assert costs == sorted(costs) and 1 <= len(cands) <= 2
        (default,) = [(inp, res) for inp, res in cands
                      if [inp.config[k].size[-1] for k in ("tile_ic", "tile_oc")] == blocks]
        assert default[1].error_no == MeasureErrorNo.NO_ERROR and default[1].mean_cost > 0
        defaults.append(default)
    # an untuned build's layouts: no transforms where channel counts divide by the vector width
    assert built_transforms(defaults, tmp_path) == built_transforms([], tmp_path)
    with_defaults.benchmark_layout_transform(layout_records=list(tuner.layout_transform_perf_records.values()))
    with_defaults.run()
    chosen = with_defaults.get_optimal_records()
    choice = [cands.index(r) for cands, r in zip(with_defaults.candidates, chosen, strict=True)]
    assert with_defaults.problem.total(choice) <= with_defaults.problem.total(
        [cands.index(d) for cands, d in zip(with_defaults.candidates, defaults, strict=True)])


def test_remeasured_candidates_keep_their_configs_with_new_times(records: list) -> None:
    logged = DPTuner(inverted_residual_net(), {"data": SHAPE}, records, ["nn.conv2d"], TARGET, verbose=False)
    again = DPTuner(inverted_residual_net(), {"data": SHAPE}, records, ["nn.conv2d"], TARGET, verbose=False)
    again.benchmark_default_layouts(runner_option(), remeasure=True)
    for old, new in zip(logged.candidates, again.candidates, strict=True):
        # the same configs, but where a default-layout config is faster than the record of its
        # layout pair, in that record's place
        blocks = [{(inp.config["tile_ic"].size[-1], inp.config["tile_oc"].size[-1]) for inp, _ in c}
                  for c in (old, new)]
        assert blocks[0] <= blocks[1] and len(blocks[1]) <= len(blocks[0]) + 1
        configs = [{(inp.task.name, inp.config.index) for inp, _ in c} for c in (old, new)]
        assert len(configs[0] & configs[1]) >= len(old) - 1
        for _, res in new:
            assert res.error_no == MeasureErrorNo.NO_ERROR and res.mean_cost > 0
            assert all(res is not r for _, r in records)
        costs = [res.mean_cost for _, res in new]
        assert costs == sorted(costs)
