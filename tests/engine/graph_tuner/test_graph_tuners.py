"""DPTuner and PBQPTuner on a small residual network with real kernel records (a few configs of
each convolution, measured) and real measured layout transforms; their chosen records and
``apply_graph_best``; Winograd records of the 3x3 stride-1 convolutions are candidates beside the
direct ones and the build uses the chosen record's template."""

from __future__ import annotations

import numpy as np
import pytest

from tunecli.autotvm import apply_graph_best
from tunecli.autotvm.graph_tuner import DPTuner, PBQPTuner
from tunecli.engine import graph as g
from tunecli.engine.graph.build_module import optimize
from tunecli.engine.graph.passes import InferType, PassContext
from tunecli.engine.graph_tuner.conv_graph import conv_graph, main_function
from tunecli.engine.log.record import load_from_file
from tunecli.engine.measure.batch import create_measure_batch, measure_option
from tunecli.engine.measure.builder import LocalBuilder
from tunecli.engine.measure.local_runner import LocalRunner
from tunecli.engine.measure.result import MeasureErrorNo, MeasureInput
from tunecli.engine.target import Target
from tunecli.engine.task.dispatcher import DispatchContext
from tunecli.engine.task.fallback_config import FallbackConfigEntity
from tunecli.engine.task.task import create
from tunecli.errors import TuneError

from .test_conv_graph import residual_net

TARGET = "llvm"
LAYOUTS_PER_TASK = 3


def measured_records(net: object) -> list:
    """For each conv workload of ``net``: its first config of each of a few (ic_bn, oc_bn)
    pairs, built and measured."""
    graph = conv_graph(main_function(net), ["data"], ["nn.conv2d"], "llvm")
    option = measure_option(LocalBuilder(n_parallel=1), LocalRunner(number=5, repeat=1))
    records = []
    for workload in dict.fromkeys(n.workload for n in graph.nodes):
        task = create(workload[0], workload[1:], TARGET)
        picked: dict[tuple[int, int], object] = {}
        for i in range(len(task.config_space)):
            cfg = task.config_space.get(i)
            key = (cfg["tile_ic"].size[-1], cfg["tile_oc"].size[-1])
            if key not in picked and key[0] > 1 and key[1] > 1:
                picked[key] = cfg
            if len(picked) == LAYOUTS_PER_TASK:
                break
        inputs = [MeasureInput(task.target, task, cfg) for cfg in picked.values()]
        results = create_measure_batch(task, option)(inputs)
        records += list(zip(inputs, results, strict=True))
    assert all(r.error_no == MeasureErrorNo.NO_ERROR for _, r in records)
    return records


@pytest.fixture(scope="module")
def records() -> list:
    return measured_records(residual_net())


@pytest.fixture(scope="module")
def dp_tuner(records: list) -> DPTuner:
    tuner = DPTuner(residual_net(), {"data": (1, 16, 8, 8)}, records, ["nn.conv2d"], TARGET, verbose=False)
    tuner.benchmark_layout_transform(min_exec_num=20)
    tuner.run()
    return tuner


def test_candidates_are_the_fastest_record_per_layout_pair(records: list, dp_tuner: DPTuner) -> None:
    for node, cands in zip(dp_tuner.conv_graph.nodes, dp_tuner.candidates, strict=True):
        assert len(cands) == LAYOUTS_PER_TASK
        assert all(inp.task.workload == node.workload for inp, _ in cands)
        costs = [res.mean_cost for _, res in cands]
        assert costs == sorted(costs)
    tuner = DPTuner(residual_net(), {"data": (1, 16, 8, 8)}, records, ["nn.conv2d"], TARGET, max_sch_num=2,
                    verbose=False)
    assert all(len(c) == 2 for c in tuner.candidates)


def test_layout_transforms_are_measured_real_kernels(dp_tuner: DPTuner) -> None:
    perf = dp_tuner.layout_transform_perf_records
    assert perf
    for wkl, (inp, res) in perf.items():
        assert wkl[0] == "layout_transform" and wkl[2] != wkl[3]
        assert inp.task.workload == wkl
        assert res.error_no == MeasureErrorNo.NO_ERROR and res.mean_cost > 0
    # Each edge matrix holds zero where the two layouts agree, else that transform's time.
    problem, graph = dp_tuner.problem, dp_tuner.conv_graph
    for edge in graph.edges:
        u, v = sorted((edge.src, edge.dst))
        matrix = problem.edge_costs[u, v] if edge.src < edge.dst else problem.edge_costs[u, v].T
        for a, (inp_a, _) in enumerate(dp_tuner.candidates[edge.src]):
            for b, (inp_b, _) in enumerate(dp_tuner.candidates[edge.dst]):
                src = f"NCHW{inp_a.config['tile_oc'].size[-1]}c"
                knob = "tile_ic" if edge.to_input else "tile_oc"
                dst = f"NCHW{inp_b.config[knob].size[-1]}c"
                if src == dst:
                    assert matrix[a, b] == 0
                elif sum(1 for e in graph.edges if {e.src, e.dst} == {u, v}) == 1:
                    assert matrix[a, b] in {res.mean_cost for _, res in perf.values()}


def test_dp_choice_is_the_best_of_all_combinations(dp_tuner: DPTuner) -> None:
    problem = dp_tuner.problem
    picked = dp_tuner.get_optimal_records()
    chosen = [cands.index(r) for cands, r in zip(dp_tuner.candidates, picked, strict=True)]
    assert problem.total(chosen) == pytest.approx(problem.total(problem.brute_force()))
    kernels_only = [0] * problem.size  # each convolution's fastest kernel, transforms ignored
    assert problem.total(chosen) <= problem.total(kernels_only)


def test_pbqp_chooses_as_dp(records: list, dp_tuner: DPTuner) -> None:
    pbqp = PBQPTuner(residual_net(), {"data": (1, 16, 8, 8)}, records, ["nn.conv2d"], TARGET, verbose=False)
    pbqp.benchmark_layout_transform(layout_records=list(dp_tuner.layout_transform_perf_records.values()))
    pbqp.run()
    assert pbqp.get_optimal_records() == dp_tuner.get_optimal_records()


def test_written_records_and_apply_graph_best(dp_tuner: DPTuner, tmp_path: object) -> None:
    path = tmp_path / "graph_opt.log"
    dp_tuner.write_opt_sch2record_file(str(path))
    written = list(load_from_file(path))
    chosen = dp_tuner.get_optimal_records()
    assert [inp.task.workload for inp, _ in written] == [n.workload for n in dp_tuner.conv_graph.nodes]
    assert [inp.config.index for inp, _ in written] == [inp.config.index for inp, _ in chosen]
    target = Target(TARGET)
    with apply_graph_best(str(path)):
        answers = [DispatchContext.current.query(target, n.workload) for n in dp_tuner.conv_graph.nodes]
        other = ("conv2d_NCHWc.x86", ("TENSOR", (1, 3, 9, 9), "float32"))
        assert isinstance(DispatchContext.current.query(target, other), FallbackConfigEntity)
    assert [a.index for a in answers] == [inp.config.index for inp, _ in chosen]
    dp_tuner.write_opt_sch2record_file(str(path))  # appends, as TVM's
    assert len(list(load_from_file(path))) == 2 * len(chosen)


def test_inferred_layout_transform_times(records: list, dp_tuner: DPTuner) -> None:
    measured = list(dp_tuner.layout_transform_perf_records.values())
    tuner = DPTuner(residual_net(), {"data": (1, 16, 8, 8)}, records, ["nn.conv2d"], TARGET, verbose=False)
    tuner.benchmark_layout_transform(layout_records=measured[:1], infer_layout=True)
    wkl0 = measured[0][0].task.workload
    per_element = measured[0][1].mean_cost / np.prod(wkl0[1][1])
    for wkl, (_, res) in tuner.layout_transform_perf_records.items():
        if wkl != wkl0:
            assert res.mean_cost == pytest.approx(per_element * np.prod(wkl[1][1]))
    tuner.run()
    assert len(tuner.get_optimal_records()) == 4
    with pytest.raises(TuneError, match="requires layout_records"):
        tuner.benchmark_layout_transform(infer_layout=True)


def test_errors_name_what_is_missing(records: list) -> None:
    few = [r for r in records if r[0].task.workload[2][1] != (16, 32, 1, 1)]
    with pytest.raises(TuneError, match=r"no tuning record of conv2d_NCHWc.x86 .*\(16, 32, 1, 1\)"):
        DPTuner(residual_net(), {"data": (1, 16, 8, 8)}, few, ["nn.conv2d"], TARGET, verbose=False)
    tuner = DPTuner(residual_net(), {"data": (1, 16, 8, 8)}, records, ["nn.conv2d"], TARGET, verbose=False)
    with pytest.raises(TuneError, match="call run"):
        tuner.get_optimal_records()
    with pytest.raises(TuneError, match="benchmark_layout_transform"):
        tuner.run()


def test_apply_graph_best_answers_a_workload_in_graph_order(records: list) -> None:
    # Two convolutions of one workload may get different configs: the k-th query gets the k-th.
    workload = records[0][0].task.workload
    first, second = [r for r in records if r[0].task.workload == workload][:2]
    target = Target(TARGET)
    with apply_graph_best([first, second]) as context:
        answers = [context.query(target, workload) for _ in range(3)]
        context.update(target, workload, first[0].config)
        assert context.query(target, workload).index == first[0].config.index
    a, b = first[0].config.index, second[0].config.index
    assert [answer.index for answer in answers] == [a, b, b]


def test_winograd_records_are_candidates_and_the_build_follows_the_chosen_template(
        records: list, dp_tuner: DPTuner, tmp_path: object) -> None:
    graph = dp_tuner.conv_graph
    option = measure_option(LocalBuilder(n_parallel=1), LocalRunner(number=5, repeat=1))
    winograd_records = []
    for node in graph.nodes[:2]:  # the 3x3 stride-1 convolutions: Winograd configs of two block pairs
        task = create("conv2d_NCHWc_winograd.x86", node.workload[1:], TARGET)
        picked: dict[tuple[int, int], object] = {}
        for i in range(len(task.config_space)):
            cfg = task.config_space.get(i)
            picked.setdefault((cfg["tile_ic"].size[-1], cfg["tile_oc"].size[-1]), cfg)
        inputs = [MeasureInput(task.target, task, cfg) for cfg in list(picked.values())[:2]]
        winograd_records += list(zip(inputs, create_measure_batch(task, option)(inputs), strict=True))
    assert winograd_records and all(r.error_no == MeasureErrorNo.NO_ERROR for _, r in winograd_records)
    both = records + winograd_records
    tuner = DPTuner(residual_net(), {"data": (1, 16, 8, 8)}, both, ["nn.conv2d"], TARGET, verbose=False)
    names = [{inp.task.name for inp, _ in cands} for cands in tuner.candidates]
    assert names[:2] == [{"conv2d_NCHWc.x86", "conv2d_NCHWc_winograd.x86"}] * 2
    assert names[2:] == [{"conv2d_NCHWc.x86"}] * 2
    measured = list(dp_tuner.layout_transform_perf_records.values())
    tuner.benchmark_layout_transform(layout_records=measured[:1], infer_layout=True)
    tuner.run()
    path = tmp_path / "graph_opt.log"  # type: ignore[operator]
    tuner.write_opt_sch2record_file(str(path))
    chosen = [inp.task.name for inp, _ in tuner.get_optimal_records()]
    net = residual_net()
    mod = InferType()(g.IRModule.from_expr(net))
    rng = np.random.default_rng(0)
    params = {p.name_hint: rng.uniform(-1, 1, p.checked_type.shape).astype("float32")
              for p in mod["main"].params[1:]}
    with apply_graph_best(str(path)), PassContext(opt_level=3, disabled_pass=["FuseOps"]):
        unfused = optimize(mod, params, TARGET)["main"]
    convs = [n for n in g.post_order(unfused) if isinstance(n, g.Call) and isinstance(n.op, g.Op)
             and "conv2d" in n.op.name]
    built = ["conv2d_NCHWc_winograd.x86" if c.op.name.endswith("winograd") else "conv2d_NCHWc.x86"
             for c in convs]
    assert sorted(built) == sorted(chosen)
    assert [c.attrs.config.index for c in convs if c.op.name.endswith("winograd")] == [
        inp.config.index for inp, _ in tuner.get_optimal_records() if inp.task.name.endswith("winograd.x86")]
