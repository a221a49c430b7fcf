"""Softmax, log_softmax and layer norm along the last axis (row reductions): compiled for any row
length (a prime such as ViT's 197, shorter than a vector, a whole number of vectors) they equal
numpy, and their reductions are vectorized: each row reduced block by block into a vector of
per-lane partial results, the rest of the row apart, every stage computed for one row inside one
parallel loop over the rows."""

from __future__ import annotations

import numpy as np
import pytest

from tunecli import relay
from tunecli.engine import graph as g
from tunecli.engine.graph.lower_group import lower_group
from tunecli.engine.graph.ops.layer_norm import layer_norm
from tunecli.engine.graph.reduction_compute import ROW_LANES
from tunecli.engine.ir import stmt as S
from tunecli.engine.ir.visitor import post_order
from tunecli.engine.runtime.module import Module
from tunecli.engine.target import Target

AVX2, AVX512 = Target("llvm -mcpu=znver3"), Target("llvm -mcpu=skylake-avx512")
LENGTHS = [1, 3, 16, 17, 197, 768]


def _softmax(x: np.ndarray) -> np.ndarray:
    z = np.exp(x - x.max(-1, keepdims=True))
    return z / z.sum(-1, keepdims=True)


def _layer_norm(x: np.ndarray, gamma: np.ndarray, beta: np.ndarray) -> np.ndarray:
    mean = x.mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(((x - mean) ** 2).mean(-1, keepdims=True) + 1e-5) * gamma + beta


def _group(kind: str, shape: tuple[int, ...]) -> g.Function:
    x = relay.var("x", shape=shape, dtype="float32")
    if kind == "layer_norm":
        n = shape[-1]
        body = layer_norm(relay.multiply(x, x), relay.var("g", shape=(n,)), relay.var("b", shape=(n,)))
    else:  # a producer fused before it (masked / scaled softmax) is read through the row's loads
        body = getattr(relay.nn, kind)(relay.add(x, x), axis=-1)
    fn = g.Function(g.free_vars(body), body)
    g.infer_types(fn)
    return fn


def _expected(kind: str, x: np.ndarray, *rest: np.ndarray) -> np.ndarray:
    if kind == "layer_norm":
        return _layer_norm(x * x, *rest)
    z = _softmax(x + x)
    return z if kind == "softmax" else np.log(z)


@pytest.mark.parametrize("target", [AVX2, AVX512], ids=["avx2", "avx512"])
@pytest.mark.parametrize("n", LENGTHS)
@pytest.mark.parametrize("kind", ["softmax", "log_softmax", "layer_norm"])
def test_a_row_reduction_of_any_length_equals_numpy(kind: str, n: int, target: Target) -> None:
    fn = _group(kind, (2, 3, n))
    kernel = Module(lower_group(fn, target, "group").kernel)
    rng = np.random.default_rng(n)
    args = [rng.uniform(-3, 3, tuple(int(d) for d in p.checked_type.shape)).astype("float32")
            for p in fn.params]
    out = np.zeros((2, 3, n), "float32")
    kernel(*args, out)
    np.testing.assert_allclose(out, _expected(kind, *args), rtol=2e-5, atol=2e-5)


def _loops(stmt: S.Stmt) -> list[S.For]:
    found: list[S.For] = []
    post_order(stmt, lambda node: found.append(node) if isinstance(node, S.For) else None)
    return found


@pytest.mark.parametrize("kind", ["softmax", "layer_norm"])
def test_the_rows_are_reduced_in_vectors_inside_one_parallel_loop(kind: str) -> None:
    fn = _group(kind, (12, 197, 197))
    func = lower_group(fn, AVX512, "group").func
    loops = _loops(func.body)
    (parallel,) = [f for f in loops if f.kind == S.PARALLEL]
    assert int(parallel.extent.value) == 12 * 197  # the rows
    assert all(f in _loops(parallel) for f in loops)  # every stage inside it
    text = str(func)
    assert ".rf[float32 * 16], local" in text  # per-lane partial results on the stack
    vectors = [f for f in loops if f.kind == S.VECTORIZED]
    assert {int(f.extent.value) for f in vectors} == {16, 8, 4, 2}  # the lanes reduced in halves
    assert "min(" not in text and "select(" not in text  # whole blocks read plainly, the tail apart


def test_short_rows_and_other_axes_keep_the_generic_schedule() -> None:
    assert ROW_LANES == 16
    for shape, axis in (((4, 15), -1), ((4, 64, 3), 1)):
        x = relay.var("x", shape=shape, dtype="float32")
        fn = g.Function([x], relay.nn.softmax(x, axis=axis))
        g.infer_types(fn)
        out = lower_group(fn, AVX2, "group").func
        assert ".rf[" not in str(out)


def test_softmax_multiplies_each_element_by_its_rows_reciprocal() -> None:
    # one division per row, outside its vector loop, instead of one per element (ViT: rows of 197)
    func = lower_group(_group("softmax", (12, 197, 197)), AVX512, "group").func
    stores = [line for line in str(func.body).splitlines() if "T_softmax_norm[" in line]
    assert stores and all("* (1.0f / (T_softmax_expsum" in line for line in stores)


def test_the_lanes_are_reduced_in_halves_and_the_exp_unrolled_over_the_row() -> None:
    # four dependent steps across the lanes (16 -> 8 -> 4 -> 2 -> 1) instead of fifteen; the
    # exp's 13 blocks of a 197-long row unrolled, so that only the last one is masked
    func = lower_group(_group("softmax", (12, 197, 197)), AVX512, "group").func
    text = str(func)
    for name in ("T_softmax_maxelem", "T_softmax_expsum"):
        for k, lanes in enumerate((8, 4, 2), start=1):
            assert f"{name}.rf_{k}[float32 * {lanes}], local" in text
    (unrolled,) = [f for f in _loops(func.body) if f.kind == S.UNROLLED]
    assert int(unrolled.extent.value) == 13
    assert "T_softmax_exp[" in str(unrolled.body)


@pytest.mark.parametrize("target", [AVX2, AVX512], ids=["avx2", "avx512"])
@pytest.mark.parametrize("n", [128, 197])
def test_softmax_of_large_and_masked_rows_equals_numpy(n: int, target: Target) -> None:
    # attention scores of large magnitude, and masks as exporters write them: -1e4 added (BERT's
    # padding mask), -inf (GPT-2's causal mask), -3.4e38 (float32's lowest)
    x = relay.var("x", shape=(4, 3, n), dtype="float32")
    mask = relay.var("mask", shape=(4, 3, n), dtype="float32")
    fn = g.Function([x, mask], relay.nn.softmax(relay.add(x, mask), axis=-1))
    g.infer_types(fn)
    kernel = Module(lower_group(fn, target, "group").kernel)
    rng = np.random.default_rng(n)
    scale = np.array([1, 30, 1e3, 1e5], "float32")[:, None, None]
    data = rng.normal(0, 1, (4, 3, n)).astype("float32") * scale
    masks = np.zeros((4, 3, n), "float32")
    masks[0] = np.where(rng.uniform(size=(3, n)) < 0.4, -1e4, 0)
    masks[1, :, n // 3:] = -np.inf
    masks[2] = np.triu(np.full((3, n), -np.inf, "float32"), 1)  # causal rows: 1, 2 and 3 entries left
    masks[3, :, 5:] = np.finfo("float32").min
    out = np.zeros((4, 3, n), "float32")
    kernel(data, masks, out)
    expected = _softmax(data.astype("float64") + masks)
    np.testing.assert_allclose(out, expected, rtol=2e-5, atol=1e-6)
    assert np.isfinite(out).all()
