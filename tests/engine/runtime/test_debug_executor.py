"""Per-kernel timing of a built network: one positive time per kernel call in graph order, outputs as
a plain run leaves them, TVM's debug table, intermediate values by node, and the trace dump."""

from __future__ import annotations

import json
import os
import time

import numpy as np
import pytest

from tunecli import relay
from tunecli.engine import graph as g
from tunecli.engine.graph.build_module import build
from tunecli.engine.runtime import GraphModule, GraphModuleDebug, GraphProfile, OpTime, time_kernels
from tunecli.errors import ArgumentError

RNG = np.random.default_rng(0)
W1 = RNG.uniform(-1, 1, (16, 4, 3, 3)).astype("float32")
W2 = RNG.uniform(-1, 1, (10, 16)).astype("float32")
DATA = RNG.uniform(-1, 1, (1, 4, 8, 8)).astype("float32")


@pytest.fixture(scope="module")
def lib():
    """conv2d+relu → global pool → dense → softmax: several kernels, one input, two parameters."""
    x = relay.var("data", shape=(1, 4, 8, 8))
    w1, w2 = relay.var("w1", shape=(16, 4, 3, 3)), relay.var("w2", shape=(10, 16))
    y = relay.nn.relu(relay.nn.conv2d(x, w1, padding=(1, 1)))
    y = relay.nn.softmax(relay.nn.dense(relay.nn.batch_flatten(relay.nn.global_avg_pool2d(y)), w2))
    return build(g.IRModule.from_expr(y), "llvm", params={"w1": W1, "w2": W2})


def _debug(lib, dump_root=None) -> GraphModuleDebug:
    m = GraphModuleDebug(lib["default"](None), lib.get_graph_json(), dump_root=dump_root)
    m.set_input("data", DATA)
    return m


def _plain_output(lib) -> np.ndarray:
    m = GraphModule(lib["default"](None))
    m.set_input("data", DATA)
    m.run()
    return m.get_output(0).numpy()


def test_one_positive_time_per_kernel_call_in_graph_order(lib) -> None:
    m = _debug(lib)
    profile = time_kernels(m.executor, lib.get_graph_json(), number=3, repeat=4)
    nodes = json.loads(lib.get_graph_json())["nodes"]
    kernel_nodes = [i for i, n in enumerate(nodes) if n["op"] == "tvm_op"]
    assert len(profile.ops) == len(kernel_nodes) == len(lib.plan.ops) > 2
    assert [op.node for op in profile.ops] == kernel_nodes
    assert [op.func_name for op in profile.ops] == [name for name, _ in lib.plan.ops]
    assert [op.name for op in profile.ops] == [nodes[i]["name"] for i in kernel_nodes]
    assert [op.shape for op in profile.ops] == [lib.plan.shapes[args[-1]] for _, args in lib.plan.ops]
    for op in profile.ops:
        assert isinstance(op, OpTime) and op.seconds > 0 and len(op.results) == 4
        assert op.seconds == float(np.median(op.results))
    assert sum(op.share for op in profile.ops) == pytest.approx(1.0)
    assert profile.kernel_seconds == pytest.approx(sum(op.seconds for op in profile.ops))
    assert profile.run_seconds is None


def test_the_outputs_are_those_of_a_plain_run(lib) -> None:
    expected = _plain_output(lib)
    m = _debug(lib)
    time_kernels(m.executor, lib.get_graph_json(), number=2)
    np.testing.assert_array_equal(m.get_output(0).numpy(), expected)
    fresh = _debug(lib)
    fresh.run(number=1, min_repeat_ms=0)
    np.testing.assert_array_equal(fresh.get_output(0).numpy(), expected)


def test_run_prints_tvms_table_slowest_first(lib, capsys) -> None:
    m = _debug(lib)
    profile = m.run(number=2, repeat=2, min_repeat_ms=0)
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["Node", "Name", "Ops", "Time(us)", "Time(%)", "Shape", "Inputs", "Outputs",
                                "Measurements(us)"]
    rows = lines[2:-1]
    assert len(rows) == len(profile.ops)
    assert [r.split()[0] for r in rows] == [op.name for op in profile.slowest()]
    times = [float(r.split()[2]) for r in rows]
    assert times == sorted(times, reverse=True)
    assert lines[-1].split()[:2] == ["Total_time", "-"]
    assert float(lines[-1].split()[2]) == pytest.approx(profile.kernel_seconds * 1e6, abs=1e-2)
    m.run(number=1, min_repeat_ms=0, sort_by_time=False)
    rows = capsys.readouterr().out.splitlines()[2:]
    assert [r.split()[0] for r in rows] == [op.name for op in profile.ops]


def test_run_individual_gives_the_mean_of_each_kernel_call(lib) -> None:
    times = _debug(lib).run_individual(number=2, repeat=3)
    assert len(times) == len(lib.plan.ops)
    assert all(isinstance(t, float) and t > 0 for t in times)


def test_each_kernel_cools_down_between_its_batches(lib) -> None:
    m = _debug(lib)
    start = time.perf_counter()
    time_kernels(m.executor, lib.get_graph_json(), number=1, repeat=3, cooldown_interval_ms=10,
                 repeats_to_cooldown=2)
    assert time.perf_counter() - start >= 0.01 * len(lib.plan.ops)  # one pause per kernel (before batch 2)
    with pytest.raises(ArgumentError, match="need cooldown_interval_ms >= 0 and repeats_to_cooldown >= 1"):
        m.run(repeats_to_cooldown=0)


def test_profile_times_whole_runs_too(lib) -> None:
    profile = _debug(lib).profile(number=2, repeat=2, min_repeat_ms=0)
    assert profile.run_seconds is not None and profile.run_seconds > 0
    assert "Run_time" in profile.table() and str(profile) == profile.table()


def test_debug_get_output_runs_up_to_a_node(lib) -> None:
    m = _debug(lib)
    nodes = json.loads(lib.get_graph_json())["nodes"]
    first = next(i for i, n in enumerate(nodes) if n["op"] == "tvm_op" and "conv2d" in n["name"])
    value = m.debug_get_output(first).numpy()
    # the conv2d+relu kernel's output: the same values in whatever layout the build chose
    windows = np.lib.stride_tricks.sliding_window_view(np.pad(DATA, ((0, 0), (0, 0), (1, 1), (1, 1))),
                                                       (3, 3), axis=(2, 3))
    conv = np.maximum(np.einsum("nchwij,kcij->nkhw", windows, W1), 0)
    np.testing.assert_allclose(np.sort(value.ravel()), np.sort(conv.ravel()), rtol=1e-5, atol=1e-5)
    out = np.empty_like(value)
    assert m.debug_get_output(nodes[first]["name"], out) is out
    np.testing.assert_array_equal(out, value)
    np.testing.assert_array_equal(m.debug_get_output("data").numpy(), DATA)
    with pytest.raises(ArgumentError, match="no node named 'nope'"):
        m.debug_get_output("nope")
    with pytest.raises(ArgumentError, match="node must be a name or an index"):
        m.debug_get_output(len(nodes))


def test_a_dump_root_gets_the_graph_and_a_chrome_trace(lib, tmp_path) -> None:
    root = tmp_path / "dbg"
    m = _debug(lib, dump_root=root)
    profile = m.run(number=1, min_repeat_ms=0)
    folder = root / "_tvmdbg_device_CPU_0"
    assert json.loads((folder / "_tvmdbg_graph_dump.json").read_text()) == json.loads(lib.get_graph_json())
    events = json.loads((folder / "_tvmdbg_execution_trace.json").read_text())["traceEvents"]
    assert [e["name"] for e in events[::2]] == [op.name for op in profile.ops]
    assert [e["ph"] for e in events[:2]] == ["B", "E"]
    assert events[1]["ts"] - events[0]["ts"] == pytest.approx(profile.ops[0].seconds * 1e6)
    m.exit()
    assert not os.path.exists(root)


def test_a_graph_json_of_another_graph_is_refused(lib) -> None:
    x = relay.var("x", shape=(2, 3))
    other = build(g.IRModule.from_expr(relay.nn.relu(x)), "llvm")
    with pytest.raises(ArgumentError, match="not the graph the executor runs"):
        GraphModuleDebug(lib["default"](None), other.get_graph_json())
    with pytest.raises(ArgumentError, match="not a graph executor graph"):
        GraphModuleDebug(lib["default"](None), "{}")


def test_slowest_and_table_order() -> None:
    seconds = [1.0, 3.0, 1.0, 1.0]
    profile = GraphProfile(tuple(OpTime(i, f"n{i}", f"f{i}", (1, i), 1, s, s / 6, (s,))
                                 for i, s in enumerate(seconds)))
    assert [op.name for op in profile.slowest()] == ["n1", "n0", "n2", "n3"]
    assert [op.name for op in profile.slowest(2)] == ["n1", "n0"]

    def first_column(table: str) -> list[str]:
        return [line.split()[0] for line in table.splitlines()[2:]]

    assert first_column(profile.table()) == ["n1", "n0", "n2", "n3", "Total_time"]
    assert first_column(profile.table(sort_by_time=False)) == ["n0", "n1", "n2", "n3"]
