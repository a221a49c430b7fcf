"""batch_matmul.x86: TVM's workload and knob order (a TVM record's index is the same config here),
every transposed form and broadcast batch equals numpy under any config, and the kernel is
register-tiled: parallel over (batch, block), accumulators in registers, vectors along N."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tunecli.engine.build import build, lower
from tunecli.engine.log.history_best import ApplyHistoryBest
from tunecli.engine.log.record import decode
from tunecli.engine.ops import registry
from tunecli.engine.ops.x86.batch_matmul import register_tile
from tunecli.engine.ops.x86.gemm import ragged_columns, ragged_rows
from tunecli.engine.target import Target
from tunecli.engine.task import task as autotvm_task
from tunecli.engine.task.factors import get_factors
from tunecli.engine.task.fallback_config import FallbackConfigEntity

ZEN4 = "llvm -mcpu=znver4"
SETTINGS = settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def workload(b: int, m: int, n: int, k: int, transpose_a: bool = False, transpose_b: bool = True,
             b_batch: int | None = None) -> tuple:
    """TVM's workload arguments (``wrap_compute_batch_matmul`` with the output shape and dtype)."""
    a = (b, k, m) if transpose_a else (b, m, k)
    bb = b if b_batch is None else b_batch
    w = (bb, n, k) if transpose_b else (bb, k, n)
    return ("TENSOR", a, "float32"), ("TENSOR", w, "float32"), (b, m, n), "float32", transpose_a, transpose_b


def run(task, index: int | None, rng) -> tuple[np.ndarray, np.ndarray]:
    """The kernel's output under config ``index`` (None: the fallback config) and the reference's."""
    with task.target:
        cfg = FallbackConfigEntity() if index is None else task.config_space.get(index)
        sch, bufs = task.instantiate(cfg)
    mod = build(sch, bufs, target=task.target)
    inputs = [rng.standard_normal(t.shape).astype("float32") for t in bufs[:-1]]
    out = np.zeros(bufs[-1].shape, dtype="float32")
    mod(*inputs, out)
    return out, np.asarray(task.reference(*inputs))


def tvm_order(index: int, m: int, n: int, k: int) -> dict[str, list[int]]:
    """TVM's decoding of a flat index: factors ascending per split, the first knob fastest."""
    fy, fx, fk = get_factors(m), get_factors(n), get_factors(k)
    iy, ix, ik = index % len(fy), index // len(fy) % len(fx), index // (len(fy) * len(fx))
    return {"tile_y": [-1, fy[iy]], "tile_x": [-1, fx[ix]], "tile_k": [-1, fk[ik]]}


def test_the_space_is_tvms_three_splits_in_two() -> None:
    space = autotvm_task.create("batch_matmul.x86", workload(12, 128, 128, 64), "llvm").config_space
    assert list(space.space_map) == ["tile_y", "tile_x", "tile_k"]
    assert len(space) == 8 * 8 * 7
    assert [e.size[-1] for e in space.space_map["tile_k"].entities] == [1, 2, 4, 8, 16, 32, 64]


def test_a_tvm_record_index_decodes_to_tvms_knob_values() -> None:
    index = 3 + 8 * 5 + 64 * 4  # tile_y 8, tile_x 32, tile_k 16 in TVM's order
    expected = tvm_order(index, 128, 128, 64)
    assert expected == {"tile_y": [-1, 8], "tile_x": [-1, 32], "tile_k": [-1, 16]}
    a, b, shape, dtype, ta, tb = workload(12, 128, 128, 64)
    row = json.dumps({
        "input": ["llvm -keys=cpu", "batch_matmul.x86", [list(a), list(b), list(shape), dtype, ta, tb], {}],
        "config": {"index": index, "code_hash": None,
                   "entity": [[name, "sp", size] for name, size in expected.items()]},
        "result": [[1e-4], 0, 1.0, 1700000000], "version": 0.2, "tvm_version": "0.19.0"})
    inp, _ = decode(row)
    task = autotvm_task.create(inp.task.name, inp.task.args, inp.target)
    cfg = task.config_space.get(inp.config.index)
    assert {name: cfg[name].size for name in expected} == expected
    assert cfg.index == inp.config.index
    assert task.workload == ("batch_matmul.x86", a, b, shape, dtype, False, True)
    # TVM writes the transpose flags as 0 / 1: the record still answers the graph's workload
    row01 = row.replace("false, true]", "0, 1]")
    assert row01 != row
    with ApplyHistoryBest([decode(row01)], pretuned=False) as best:
        assert best.query(Target("llvm"), task.workload).index == index


def test_every_index_of_a_small_space_is_tvms() -> None:
    space = autotvm_task.create("batch_matmul.x86", workload(2, 12, 16, 6), "llvm").config_space
    for index in range(len(space)):
        cfg = space.get(index)
        want = tvm_order(index, 12, 16, 6)
        assert {n: cfg[n].size[-1] for n in want} == {n: s[-1] for n, s in want.items()}


@st.composite
def problems(draw):
    b, m, n, k = (draw(st.integers(1, 3)), draw(st.integers(1, 20)),
                  draw(st.one_of(st.integers(1, 40), st.sampled_from([67, 97]))),  # 67, 97: ragged N
                  draw(st.integers(1, 24)))
    ta, tb = draw(st.booleans()), draw(st.booleans())
    b_batch = draw(st.sampled_from([b, 1]))
    return workload(b, m, n, k, ta, tb, b_batch)


@SETTINGS
@given(problems(), st.integers(0, 2**31), st.integers(0, 2**31))
def test_any_config_and_the_fallback_of_any_form_equal_numpy(args: tuple, pick: int, seed: int) -> None:
    task = autotvm_task.create("batch_matmul.x86", args, "llvm")
    for index in (pick % len(task.config_space), None):
        out, expected = run(task, index, np.random.default_rng(seed))
        np.testing.assert_allclose(out, expected, rtol=1e-4, atol=1e-4)


def test_the_fallback_is_a_register_tile_parallel_over_batch_and_blocks() -> None:
    strategy = registry.get_strategy("batch_matmul.x86")
    with Target("llvm -mcpu=skylake-avx512"):
        cfg = FallbackConfigEntity()
        call = strategy.kernel_call(cfg, *workload(12, 128, 128, 64))
        (out,) = strategy.outputs_of(cfg, call)
        sch = strategy.schedule(cfg, [out])
        text = str(lower(sch, [*call.inputs, out]))
    mr, nr = cfg["tile_y"].size[-1], cfg["tile_x"].size[-1]
    assert nr % 16 == 0 and 16 <= mr * nr // 16 <= 29 and cfg["tile_k"].size == [4, 16]
    assert register_tile(mr, nr, 16, 29) == (mr, nr)
    assert re.search(r"parallel for \(\S+, 0, \d+\)", text)
    assert f"T_batch_matmul_pack.local[float32 * {mr * nr}]" in text
    assert f"vectorized for (j.c, 0, {nr})" in text


def test_a_big_block_is_computed_in_register_tiles() -> None:
    assert register_tile(128, 128, 16, 29) == (4, 64)  # 16 accumulators of 29 registers
    assert register_tile(16, 16, 8, 12) == (4, 16)
    assert register_tile(3, 5, 16, 29) == (3, 5)


@pytest.mark.parametrize("block_y, block_x, whole_x", [(197, 197, True), (197, 32, False), (64, 197, True)])
def test_a_ragged_block_is_computed_in_register_tiles_that_pad_it_little(block_y: int, block_x: int,
                                                                         whole_x: bool) -> None:
    # ViT's attention scores (all 197 x 197 tokens in one block): tiles 64 wide would compute 256
    # columns for 197, a third more work; the tile chosen pads rows and columns by under 15%
    rows, cols = register_tile(block_y, block_x, 16, 29, whole_x=whole_x)
    padded = -(-block_y // rows) * rows * (-(-block_x // cols) * cols)
    assert padded <= 1.15 * block_y * block_x
    assert cols % 16 == 0 and 8 <= rows * cols // 16 <= 29  # whole vectors, enough accumulators, no spill


@pytest.mark.parametrize("b, m, n, k, transpose_b", [
    (2, 197, 197, 8, True),  # ViT's attention scores: 197 tokens, a prime
    (2, 197, 24, 197, False),  # ... times the values
    (1, 3, 197, 5, False),  # a ragged N read in place is packed in padded panels
    (3, 1, 67, 3, True),
])
def test_a_ragged_fallback_tiles_past_the_shape_and_equals_numpy(b: int, m: int, n: int, k: int,
                                                                  transpose_b: bool) -> None:
    task = autotvm_task.create("batch_matmul.x86", workload(b, m, n, k, transpose_b=transpose_b), ZEN4)
    out, expected = run(task, None, np.random.default_rng(m * n))
    np.testing.assert_allclose(out, expected, rtol=1e-4, atol=1e-4)
    with task.target:
        cfg = FallbackConfigEntity()
        task.instantiate(cfg)
    mr, nr = cfg["tile_y"].size[-1], cfg["tile_x"].size[-1]
    if ragged_rows(m):
        assert mr > 1 and m % mr
    if ragged_columns(n, 64):
        assert nr % 16 == 0


def test_a_ragged_product_accumulates_unguarded_in_registers() -> None:
    # the product runs over padded panels: only the output's stores of the last panel are guarded
    strategy = registry.get_strategy("batch_matmul.x86")
    with Target(ZEN4):
        cfg = FallbackConfigEntity()
        call = strategy.kernel_call(cfg, *workload(12, 197, 197, 64))
        (out,) = strategy.outputs_of(cfg, call)
        text = str(lower(strategy.schedule(cfg, [out]), [*call.inputs, out]))
    nr = cfg["tile_x"].size[-1]
    accumulate = text[text.index("for (k.outer"):text.index("unrolled for (i1.inner.inner")]
    assert f"vectorized for (j, 0, {nr})" in accumulate and "j) < 197" not in accumulate
    assert "i2.inner.inner) < 197" in text  # the stores of the last panel


@pytest.mark.parametrize("transpose_b", [True, False])
def test_a_tuned_block_of_all_of_a_ragged_shape_is_padded_to_whole_register_tiles(transpose_b: bool) -> None:
    # TVM's splits of 197 give blocks of 1 or 197: a 197 x 197 block is computed in vector tiles
    task = autotvm_task.create("batch_matmul.x86", workload(2, 197, 197, 8, transpose_b=transpose_b), ZEN4)
    space = task.config_space
    index = next(i for i in range(len(space))
                 if space.get(i)["tile_y"].size[-1] == 197 and space.get(i)["tile_x"].size[-1] == 197)
    out, expected = run(task, index, np.random.default_rng(7))
    np.testing.assert_allclose(out, expected, rtol=1e-4, atol=1e-4)
    assert register_tile(197, 197, 16, 29, whole_x=True) == (11, 32)  # 198 x 224 computed
    assert register_tile(197, 197, 16, 29)[1] == 1  # a block of many: TVM's divisors only
