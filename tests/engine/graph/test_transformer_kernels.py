"""A transformer encoder layer builds into fused kernels: dense + bias + erf-gelu is one kernel,
Q·Kᵀ with its scale and mask one, softmax one, the residual add rides in its dense layer and
each layer norm is one; its batch matmuls are ``batch_matmul.x86`` tasks in both transposed
forms; its dense layers of several rows may run ``dense_pack.x86`` (weights packed at build
time), which a record of lower cost chooses.  Every build equals the interpreter."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from tunecli import relay
from tunecli.engine import graph as g
from tunecli.engine.graph.build_module import BuiltGraph, build
from tunecli.engine.graph.extract import extract_from_program, tunable_operators
from tunecli.engine.graph.op_strategy import chosen_implementation, dense_pack_implementation, implementation
from tunecli.engine.graph.ops.layer_norm import layer_norm
from tunecli.engine.graph.ops.unary import erf
from tunecli.engine.graph.passes import PassContext
from tunecli.engine.log.history_best import ApplyHistoryBest
from tunecli.engine.measure.result import MeasureErrorNo, MeasureInput, MeasureResult
from tunecli.engine.target import Target
from tunecli.engine.task.task import create

S, H, HEADS = 16, 32, 2
D = H // HEADS
LLVM = Target("llvm")


def _dense(x: g.Expr, name: str, n: int, k: int) -> g.Expr:
    return relay.nn.bias_add(relay.nn.dense(x, relay.var(f"{name}_w", shape=(n, k))),
                             relay.var(f"{name}_b", shape=(n,)))


def _gelu(x: g.Expr) -> g.Expr:
    inner = relay.add(relay.const(1.0), erf(relay.divide(x, relay.const(math.sqrt(2.0)))))
    return relay.multiply(relay.multiply(x, relay.const(0.5)), inner)


def encoder_layer() -> tuple[g.IRModule, dict[str, np.ndarray]]:
    """A BERT-style encoder layer of sequence ``S``, width ``H``, with an additive padding mask."""
    x = relay.var("data", shape=(S, H))
    mask = relay.var("mask", shape=(1, 1, S))

    def heads(t: g.Expr) -> g.Expr:
        return relay.transpose(relay.reshape(t, (S, HEADS, D)), (1, 0, 2))

    q, k, v = (heads(_dense(x, n, H, H)) for n in ("q", "k", "v"))
    scores = relay.add(relay.multiply(relay.nn.batch_matmul(q, k), relay.const(1 / math.sqrt(D))), mask)
    context = relay.nn.batch_matmul(relay.nn.softmax(scores, axis=-1), v, transpose_b=False)
    context = relay.reshape(relay.transpose(context, (1, 0, 2)), (S, H))
    h = layer_norm(relay.add(_dense(context, "o", H, H), x), relay.var("ln1_g", shape=(H,)),
                   relay.var("ln1_b", shape=(H,)))
    out = relay.add(_dense(_gelu(_dense(h, "f1", 4 * H, H)), "f2", H, 4 * H), h)
    out = layer_norm(out, relay.var("ln2_g", shape=(H,)), relay.var("ln2_b", shape=(H,)))
    fn = relay.Function(relay.analysis.free_vars(out), out)
    rng = np.random.default_rng(0)
    params = {p.name_hint: (rng.standard_normal(tuple(p.type_annotation.shape)) * 0.2).astype("float32")
              for p in fn.params if p.name_hint not in ("data", "mask")}
    return g.IRModule.from_expr(fn), params


def _inputs() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(1)
    mask = np.where(np.arange(S) >= S - 3, -1e4, 0.0).reshape(1, 1, S).astype("float32")  # 3 padded tokens
    return {"data": rng.standard_normal((S, H)).astype("float32"), "mask": mask}


def _run(lib: BuiltGraph, inputs: dict[str, np.ndarray]) -> np.ndarray:
    m = lib["default"](None)
    for name, value in inputs.items():
        m.set_input(name, value)
    m.run()
    return m.get_output(0).numpy()


def _typed(expr: g.Expr) -> g.Call:
    g.infer_types(g.Function(g.free_vars(expr), expr))
    return expr


def _tuned(*impls_costs: tuple) -> list[tuple]:
    records = []
    for impl, cost in impls_costs:
        task = create(impl.task_name, impl.args, LLVM)
        result = MeasureResult((cost,), MeasureErrorNo.NO_ERROR, 0.01, 0.0)
        records.append((MeasureInput(LLVM, task, task.config_space.get(len(task.config_space) // 3)), result))
    return records


@pytest.fixture(scope="module")
def encoder() -> tuple[g.IRModule, dict, BuiltGraph]:
    mod, params = encoder_layer()
    with PassContext(opt_level=3):
        return mod, params, build(mod, "llvm", params=params)


def _kernels(lib: BuiltGraph) -> list[str]:
    return [n["attrs"]["func_name"] for n in json.loads(lib.get_graph_json())["nodes"] if n["op"] == "tvm_op"]


def test_the_encoder_layer_equals_the_interpreter(encoder) -> None:
    mod, params, lib = encoder
    inputs = _inputs()
    want = g.evaluate(mod, (), {**inputs, **params})
    np.testing.assert_allclose(_run(lib, inputs), want, rtol=1e-4, atol=1e-5)


def test_each_epilogue_is_fused_into_one_kernel(encoder) -> None:
    kernels = [k.removeprefix("tvmgen_default_fused_") for k in _kernels(encoder[2])]
    assert sum(k.startswith("nn_dense_nn_bias_add_multiply_divide_erf_add_multiply") for k in kernels) == 1
    assert sum(k.startswith("nn_batch_matmul_multiply_add") for k in kernels) == 1  # scale and mask
    assert sum(k.startswith("nn_softmax") for k in kernels) == 1
    assert sum(k.startswith("nn_dense_nn_bias_add_add") for k in kernels) == 2  # the residual adds
    assert sum(k.startswith("nn_layer_norm") for k in kernels) == 2
    assert not any("erf" in k and "dense" not in k for k in kernels)
    # 6 dense layers, 2 batch matmuls, softmax, 2 layer norms, 3 head splits and 1 head merge
    assert len(kernels) == 6 + 2 + 1 + 2 + 3 + 1


def test_the_gelu_epilogue_is_simd_code(encoder) -> None:
    (gelu,) = [k for name, k in encoder[2].kernels.items() if "erf" in name]
    assert "erff" not in gelu.ir_text and "x float>" in gelu.ir_text  # no libm call per lane


def test_extraction_gives_batch_matmul_tasks_in_both_forms_and_dense_pack_alternatives() -> None:
    mod, params = encoder_layer()
    tasks = extract_from_program(mod, params, "llvm", ops=[relay.op.get("nn.batch_matmul")])
    assert [t.args for t in tasks] == [
        (("TENSOR", (HEADS, S, D), "float32"), ("TENSOR", (HEADS, S, D), "float32"), (HEADS, S, S), "float32",
         False, True),
        (("TENSOR", (HEADS, S, S), "float32"), ("TENSOR", (HEADS, S, D), "float32"), (HEADS, S, D), "float32",
         False, False),
    ]
    assert {t.name for t in tasks} == {"batch_matmul.x86"}
    operators = tunable_operators(mod, params, LLVM)
    dense = [op for op in operators if op.implementations[0].strategy.op == "dense"]
    names = [[i.task_name for i in op.implementations] for op in dense]
    assert names == [["dense.x86", "dense_pack.x86"]] * 3
    assert sum(op.occurrences for op in dense) == 6


def test_a_tuned_dense_pack_record_runs_with_its_weight_packed_at_build_time() -> None:
    x = relay.var("data", shape=(S, H))
    mod = g.IRModule.from_expr(_gelu(_dense(x, "f1", 4 * H, H)))
    rng = np.random.default_rng(2)
    params = {"f1_w": rng.standard_normal((4 * H, H)).astype("float32"),
              "f1_b": rng.standard_normal(4 * H).astype("float32")}
    (op,) = tunable_operators(mod, params, LLVM)
    own, packed = op.implementations
    records = _tuned((own, 2e-3), (packed, 1e-3))
    with ApplyHistoryBest(records, pretuned=False), PassContext(opt_level=3):
        lib = build(mod, "llvm", params=params)
    assert [a.task_name for a in lib.summary.tuned] == ["dense_pack.x86"]
    assert any(p.ndim == 3 for p in lib.get_params().values())  # [N / bn, K, bn] panels
    assert len(_kernels(lib)) == 1
    data = rng.standard_normal((S, H)).astype("float32")
    want = g.evaluate(mod, (), {"data": data, **params})
    np.testing.assert_allclose(_run(lib, {"data": data}), want, rtol=1e-4, atol=1e-5)


def test_four_d_attention_scores_scale_mask_and_softmax_in_one_kernel() -> None:
    """ONNX MatMul of [1, heads, S, D] operands: a reshape separates the batch matmul from the
    scale and mask, which the softmax then takes as its prologue."""
    q, k = relay.var("q", shape=(1, HEADS, S, D)), relay.var("k", shape=(1, HEADS, S, D))
    mask = relay.var("mask", shape=(1, 1, 1, S))
    scores = relay.nn.batch_matmul(relay.reshape(q, (HEADS, S, D)), relay.reshape(k, (HEADS, S, D)))
    scores = relay.add(relay.divide(relay.reshape(scores, (1, HEADS, S, S)), relay.const(math.sqrt(D))), mask)
    out = relay.nn.softmax(scores, axis=-1)
    mod = g.IRModule.from_expr(relay.Function(relay.analysis.free_vars(out), out))
    with PassContext(opt_level=3):
        lib = build(mod, "llvm", params={})
    kernels = [k.removeprefix("tvmgen_default_fused_") for k in _kernels(lib)]
    assert [k for k in kernels if "softmax" in k] == ["reshape_divide_add_nn_softmax"]
    assert sum("batch_matmul" in k for k in kernels) == 1
    rng = np.random.default_rng(3)
    inputs = {"q": rng.standard_normal((1, HEADS, S, D)).astype("float32"),
              "k": rng.standard_normal((1, HEADS, S, D)).astype("float32"),
              "mask": _inputs()["mask"].reshape(1, 1, 1, S)}
    np.testing.assert_allclose(_run(lib, inputs), g.evaluate(mod, (), inputs), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize(("transpose_a", "transpose_b"),
                         [(False, True), (False, False), (True, True), (True, False)])
def test_every_transposed_batch_matmul_builds_through_its_template_with_an_epilogue(transpose_a: bool,
                                                                                   transpose_b: bool) -> None:
    b, m, n, k = 3, 10, 24, 7
    a = relay.var("a", shape=(b, k, m) if transpose_a else (b, m, k))
    w = relay.var("w", shape=(1, n, k) if transpose_b else (1, k, n))  # a weight broadcast over the batch
    bias = relay.var("bias", shape=(n,))
    product = relay.nn.batch_matmul(a, w, transpose_a=transpose_a, transpose_b=transpose_b)
    out = relay.nn.relu(relay.add(product, bias))
    mod = g.IRModule.from_expr(relay.Function(relay.analysis.free_vars(out), out))
    rng = np.random.default_rng(4)
    params = {"w": rng.standard_normal(tuple(w.type_annotation.shape)).astype("float32"),
              "bias": rng.standard_normal(n).astype("float32")}
    with PassContext(opt_level=3):
        lib = build(mod, "llvm", params=params)
    untuned = (*lib.summary.fallback, *lib.summary.nearest)  # the package may hold a nearest record
    assert [a.task_name for a in untuned] == ["batch_matmul.x86"]
    assert len(_kernels(lib)) == 1
    data = rng.standard_normal(tuple(a.type_annotation.shape)).astype("float32")
    want = g.evaluate(mod, (), {"a": data, **params})
    np.testing.assert_allclose(_run(lib, {"a": data}), want, rtol=1e-5, atol=1e-5)


def test_dense_pack_is_an_alternative_of_every_dense_layer() -> None:
    weight = relay.var("w", shape=(48, 32))
    gemv = _typed(relay.nn.dense(relay.var("x", shape=(1, 32)), weight))
    assert dense_pack_implementation(gemv, LLVM).task_name == "dense_pack.x86"  # TVM's two x86 tasks
    with ApplyHistoryBest([], pretuned=False):
        assert chosen_implementation(gemv, LLVM) == implementation(gemv, LLVM)
    layer = _typed(relay.nn.dense(relay.var("x", shape=(S, 32)), weight))
    own, packed = implementation(layer, LLVM), dense_pack_implementation(layer, LLVM)
    assert packed.workload == ("dense_pack.x86", ("TENSOR", (S, 32), "float32"),
                               ("TENSOR", (48, 32), "float32"), None, "float32")
    with ApplyHistoryBest([], pretuned=False):
        assert chosen_implementation(layer, LLVM) == own  # untuned: the higher plevel
    with ApplyHistoryBest(_tuned((packed, 1e-3)), pretuned=False):
        assert chosen_implementation(layer, LLVM) == packed  # the only tuned one
    with ApplyHistoryBest(_tuned((packed, 2e-3), (own, 1e-3)), pretuned=False):
        assert chosen_implementation(layer, LLVM) == own  # the faster record
