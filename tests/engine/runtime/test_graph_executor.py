"""GraphModule: TVM's graph executor interface over a built graph, and the memory plan it runs on."""

from __future__ import annotations

import numpy as np
import pytest

from tunecli import relay
from tunecli.contrib import graph_executor
from tunecli.engine import graph as g
from tunecli.engine.graph.build_module import build
from tunecli.engine.graph.graph_codegen import plan_storage
from tunecli.engine.runtime import BenchmarkResult, GraphModule
from tunecli.errors import ArgumentError

W = np.arange(12, dtype="float32").reshape(4, 3) / 10


@pytest.fixture(scope="module")
def lib():
    x = relay.var("x", shape=(2, 3))
    w = relay.var("w", shape=(4, 3))
    dense = relay.nn.dense(x, w)
    return build(g.IRModule.from_expr(relay.Tuple([relay.nn.relu(dense), relay.sigmoid(x)])), "llvm",
                 params={"w": W})


def _expected(x: np.ndarray, w: np.ndarray = W) -> np.ndarray:
    return np.maximum(x @ w.T, 0)


def test_inputs_by_name_index_and_keyword_and_two_outputs(lib) -> None:
    m = graph_executor.GraphModule(lib["default"](None))
    x = np.arange(6, dtype="float32").reshape(2, 3) - 2
    m.set_input("x", x)
    m.run()
    np.testing.assert_allclose(m.get_output(0).numpy(), _expected(x), rtol=1e-6)
    np.testing.assert_allclose(m.get_output(1).numpy(), 1 / (1 + np.exp(-x)), rtol=1e-6)
    assert m.get_num_outputs() == 2
    m.set_input(0, -x)
    m.run()
    np.testing.assert_allclose(m.get_output(0).numpy(), _expected(-x), rtol=1e-6)
    m.run(x=x)
    np.testing.assert_allclose(m.get_input("x").numpy(), x)
    assert m.get_input_index("x") == 0


def test_a_parameter_set_on_one_executor_stays_its_own(lib) -> None:
    a, b = GraphModule(lib["default"](None)), GraphModule(lib["default"](None))
    x = np.ones((2, 3), "float32")
    params = lib.get_params()
    (name,) = params
    a.set_input(**{name: np.full(params[name].shape, 2.0, "float32")}, x=x)
    b.set_input("x", x)
    a.run()
    b.run()
    assert np.all(a.get_output(0).numpy() == 6.0)
    np.testing.assert_allclose(b.get_output(0).numpy(), _expected(x), rtol=1e-6)


def test_benchmark_and_create(lib) -> None:
    m = graph_executor.create(lib.get_graph_json(), lib, None)
    result = m.benchmark(None, number=2, repeat=3)
    assert isinstance(result, BenchmarkResult) and len(result.results) == 3 and result.min > 0


def test_a_benchmark_result_prints_tvms_summary_in_milliseconds() -> None:
    result = BenchmarkResult([0.010, 0.020, 0.030])
    title, header, values = str(result).splitlines()
    assert title == "Execution time summary:"
    assert header.split() == ["mean", "(ms)", "median", "(ms)", "max", "(ms)", "min", "(ms)", "std", "(ms)"]
    assert [float(v) for v in values.split()] == [20.0, 20.0, 30.0, 10.0, 8.165]
    assert repr(result).startswith("BenchmarkResult(min=0.01, mean=0.02")


def test_create_from_get_lib_takes_the_parameters_by_set_input(lib) -> None:
    """TVM's ``create(lib.get_graph_json(), lib.get_lib(), dev)``: the kernels only; the parameters
    come with ``set_input(**lib.get_params())``."""
    m = graph_executor.create(lib.get_graph_json(), lib.get_lib(), None)
    x = np.arange(6, dtype="float32").reshape(2, 3)
    m.set_input("x", x)
    m.set_input(**lib.get_params())
    m.run()
    np.testing.assert_allclose(m.get_output(0).numpy(), _expected(x), rtol=1e-6)
    with pytest.raises(ArgumentError, match="libmod must be a built or loaded library .* got dict"):
        graph_executor.create(lib.get_graph_json(), {}, None)


def test_bad_inputs_are_named(lib) -> None:
    m = GraphModule(lib["default"](None))
    with pytest.raises(ArgumentError, match="no input named 'y'; inputs: x"):
        m.set_input("y", np.zeros((2, 3)))
    with pytest.raises(ArgumentError, match="input 'x' has shape \\[2, 3\\], got \\[5\\]"):
        m.set_input("x", np.zeros(5))
    with pytest.raises(ArgumentError, match="get_output: index 2 out of range"):
        m.get_output(2)
    with pytest.raises(ArgumentError, match="use lib\\['default'\\]\\(dev\\)"):
        lib["main"]
    with pytest.raises(ArgumentError, match="GraphModule: expected lib\\['default'\\]\\(dev\\)"):
        GraphModule(lib)


def test_plan_storage_reuses_a_buffer_once_its_readers_ran() -> None:
    # entries: 0 input; kernels 1 = f(0), 2 = f(1), 3 = f(2), 4 = f(1, 3) (1 is read late)
    shapes = [(4,), (4,), (4,), (4,), (4,)]
    storage = plan_storage(5, [(1, [0]), (2, [1]), (3, [2]), (4, [1, 3])], [4], shapes, ["float32"] * 5)
    assert storage[0] not in storage[1:]
    assert len({storage[1], storage[2], storage[3]}) == 3  # 1 is live until the last kernel
    assert storage[3] != storage[4] and storage[1] != storage[4]
    chain = plan_storage(5, [(1, [0]), (2, [1]), (3, [2]), (4, [3])], [4], shapes, ["float32"] * 5)
    assert chain[3] == chain[1] and chain[4] == chain[2] and len(set(chain)) == 3  # two buffers alternate
