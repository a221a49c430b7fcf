"""The x86 GEMM schedule of ``dense.x86`` / ``batch_matmul.x86``: a fallback config is a register
tile sized to the target's vectors, so an untuned batch-1 dense (a GEMV) is vectorized with
several accumulators and parallel over weight panels, and small batches stay correct."""

from __future__ import annotations

import re

import numpy as np
import pytest

from tunecli.engine import te
from tunecli.engine.build import build, lower
from tunecli.engine.ops import registry
from tunecli.engine.ops.nn import bias_add, relu
from tunecli.engine.ops.reference import pack_dense_weight
from tunecli.engine.ops.x86.gemm import (
    TASK_PANEL_BYTES,
    fallback_gemm_tile,
    panel_widths,
    ragged_columns,
    ragged_rows,
    task_panels,
    tile_rows,
)
from tunecli.engine.target import Target
from tunecli.engine.task import task as autotvm_task
from tunecli.engine.task.factors import get_factors
from tunecli.engine.task.fallback_config import FallbackConfigEntity
from tunecli.engine.task.space import ConfigEntity

ZEN3 = "llvm -mcpu=znver3"


def fused_dense(m: int, n: int, k: int, target: str = "llvm") -> tuple:
    """``relu(dense + bias)`` of ``dense.x86`` with its fallback config: (config, schedule, tensors)."""
    strategy = registry.get_strategy("dense.x86")
    cfg = FallbackConfigEntity()
    with Target(target):
        call = strategy.kernel_call(cfg, m, n, k, "float32")
        (out,) = strategy.outputs_of(cfg, call)
        bias = te.placeholder((n,), dtype="float32", name="bias")
        fused = relu(bias_add(out, bias, axis=1))
        sch = strategy.schedule(cfg, [out], epilogue=fused)
    return cfg, sch, [*call.inputs, bias, fused]


@pytest.mark.parametrize("m", [1, 2, 16])
@pytest.mark.parametrize("n, k", [(77, 45), (1000, 64)])
def test_fallback_dense_with_bias_relu_equals_numpy(m: int, n: int, k: int) -> None:
    cfg, sch, (data, weight, bias, out) = fused_dense(m, n, k, ZEN3)
    mod = build(sch, [data, weight, bias, out], target=ZEN3)
    rng = np.random.default_rng(m * n + k)
    x = rng.standard_normal((m, k)).astype("float32")
    w = rng.standard_normal((n, k)).astype("float32")
    b = rng.standard_normal(n).astype("float32")
    got = np.zeros((m, n), dtype="float32")
    mod(x, pack_dense_weight(w, cfg["tile_x"].size[-1]), b, got)
    np.testing.assert_allclose(got, np.maximum(x @ w.T + b, 0), rtol=1e-4, atol=1e-4)


def test_fallback_gemv_is_vectorized_with_several_accumulators_in_parallel() -> None:
    # ResNet's / MobileNet's classifier: 1 x 1024 @ 1024 x 1000 (1000 = 8 * 125: no 16-wide panel)
    cfg, sch, tensors = fused_dense(1, 1000, 1024, ZEN3)
    assert cfg["tile_x"].size[-1] == 40 and cfg["parallel"].val == 1
    text = str(lower(sch, tensors))
    # 40 accumulators (5 AVX2 vectors) updated by one vector multiply-add per k
    assert re.search(r"allocate (T_dense_pack\S*)\[float32 \* 40\], local", text)
    assert re.search(r"vectorized for \((\S+), 0, 40\) \{\s*(T_dense_pack\S*)\[\1\] = \(\2\[\1\] \+ "
                     r"\(data\[", text)
    assert re.search(r"parallel for \((\S+), 0, 25\) \{\s*allocate T_dense_pack", text)
    assert "unrolled for (k.inner, 0, 16)" in text


@pytest.mark.parametrize("m, n", [(1, 1000), (2, 1000), (16, 1000), (1, 1024), (16, 1024), (4, 77)])
def test_fallback_tile_fits_the_registers_and_prefers_whole_vectors(m: int, n: int) -> None:
    panels = [w for w in get_factors(n) if w <= 64 and (n % 16 or w % 16 == 0)]
    mr, nr = fallback_gemm_tile(m, panels, lanes=8, registers=12)
    assert m % mr == 0 and nr in panels
    assert mr * -(-nr // 8) <= 12
    if any(w % 8 == 0 for w in panels):
        assert nr % 8 == 0
    if m == 1:  # a GEMV: the widest whole-vector panel that fits holds the most accumulators
        assert nr == max(w for w in panels if w % 8 == 0 and w // 8 <= 12)


def test_small_work_stays_serial() -> None:
    cfg, _, _ = fused_dense(1, 16, 8)
    assert cfg["parallel"].val == 0


def test_the_parallel_knob_is_a_choice_only_for_a_small_product() -> None:
    # at one thread both values measure alike: a large product's tune must not choose serial
    small = autotvm_task.create("dense.x86", (16, 64, 16, "float32"), ZEN3).config_space
    large = autotvm_task.create("dense.x86", (128, 768, 768, "float32"), ZEN3).config_space
    assert [e.val for e in small.space_map["parallel"].entities] == [0, 1]
    assert [e.val for e in large.space_map["parallel"].entities] == [1]


@pytest.mark.parametrize("m, n, k, tile_y, tile_x, tile_k", [
    (197, 768, 768, [-1, 1, 14], [-1, 2, 32], [-1, 12]),
    (197, 3072, 768, [-1, 1, 8], [-1, 48, 32], [-1, 1]),
    (197, 768, 3072, [-1, 1, 11], [-1, 24, 32], [-1, 3]),
])
def test_a_large_products_record_with_parallel_0_runs_its_tiles_in_parallel(
        m: int, n: int, k: int, tile_y: list[int], tile_x: list[int], tile_k: list[int]) -> None:
    # ViT-B/16's dense layers (197 tokens) in records of a space that offered serial, tuned at one
    # thread: the outer tile loop is parallel anyway, with at least 2 x 2 threads' tasks
    task = autotvm_task.create("dense.x86", (m, n, k, "float32"), ZEN3)
    cfg = ConfigEntity.from_json_dict({"index": 0, "code_hash": None, "entity": [
        ["tile_y", "sp", tile_y], ["tile_x", "sp", tile_x], ["tile_k", "sp", tile_k],
        ["parallel", "ot", 0], ["unroll_k", "ot", 0]]})
    with Target(ZEN3):
        sch, tensors = task.instantiate(cfg)
    loops = re.findall(r"parallel for \((\S+), 0, (\d+)\)", str(lower(sch, tensors)))
    tiles = -(-m // tile_y[-1]) * -(-n // (tile_x[1] * tile_x[2]))
    assert len(loops) == 1 and int(loops[0][1]) >= tiles >= 2 * 2


@pytest.mark.parametrize("m, n, k, tile_y, tile_x, iterations", [
    (197, 768, 3072, [-1, 1, 11], [-1, 24, 32], 24 * 18),  # 24 panels of 384 KiB a task: one at a time
    (197, 3072, 768, [-1, 1, 8], [-1, 48, 32], 2 * 12 * 25),  # 48 of 96 KiB: 4 at a time
    (128, 3072, 768, [-1, 16, 8], [-1, 2, 48], 32),  # BERT's 2 panels of 144 KiB: as the config says
])
def test_a_task_runs_its_rows_over_as_many_panels_as_stay_in_the_l2_cache(
        m: int, n: int, k: int, tile_y: list[int], tile_x: list[int], iterations: int) -> None:
    # ViT-B/16's feed-forward records: a task of one row tile over all the panels (the whole
    # weight, 9 MiB) would stream them from the shared cache once per row tile, which two cores
    # do not sustain; each iteration of the parallel loop takes at most TASK_PANEL_BYTES of them
    task = autotvm_task.create("dense.x86", (m, n, k, "float32"), ZEN3)
    cfg = ConfigEntity.from_json_dict({"index": 0, "code_hash": None, "entity": [
        ["tile_y", "sp", tile_y], ["tile_x", "sp", tile_x], ["tile_k", "sp", [-1, 16]],
        ["parallel", "ot", 1], ["unroll_k", "ot", 0]]})
    with Target(ZEN3):
        sch, tensors = task.instantiate(cfg)
        out = np.zeros((m, n), "float32")
        rng = np.random.default_rng(0)
        data, weight = (rng.standard_normal(shape).astype("float32") for shape in ((m, k), (n, k)))
        build(sch, tensors, target=ZEN3)(data, pack_dense_weight(weight, tile_x[-1]), out)
    loops = re.findall(r"parallel for \((\S+), 0, (\d+)\)", str(lower(sch, tensors)))
    assert [int(count) for _, count in loops] == [iterations]
    assert task_panels(tile_x[1], tile_x[-1] * k * 4) * tile_x[-1] * k * 4 <= TASK_PANEL_BYTES
    np.testing.assert_allclose(out, data @ weight.T, rtol=1e-4, atol=1e-3)


def test_a_small_product_follows_the_parallel_knob() -> None:
    task = autotvm_task.create("dense.x86", (16, 64, 16, "float32"), ZEN3)
    for knob in (0, 1):
        cfg = ConfigEntity.from_json_dict({"index": 0, "code_hash": None, "entity": [
            ["tile_y", "sp", [-1, 1, 4]], ["tile_x", "sp", [-1, 1, 16]], ["tile_k", "sp", [-1, 16]],
            ["parallel", "ot", knob], ["unroll_k", "ot", 0]]})
        with Target(ZEN3):
            sch, tensors = task.instantiate(cfg)
        assert ("parallel for" in str(lower(sch, tensors))) == bool(knob)


@pytest.mark.parametrize("m, n, k", [(1, 1000, 512), (16, 1024, 1024), (3, 1001, 27)])
def test_the_fallback_config_is_a_point_of_the_tuning_space(m: int, n: int, k: int) -> None:
    cfg, _, _ = fused_dense(m, n, k, ZEN3)
    space = autotvm_task.create("dense.x86", (m, n, k, "float32"), ZEN3).config_space

    def value(entity):  # a split's outer factor is -1 in the space
        return [-1, *entity.size[1:]] if hasattr(entity, "size") else entity.val

    for name, knob in space.space_map.items():
        assert value(cfg[name]) in [value(e) for e in knob.entities], name


@pytest.mark.parametrize("m, n", [(197, 768), (197, 50), (5, 197), (17, 67), (1, 101)])
def test_ragged_rows_and_columns_tile_past_the_shape_and_equal_numpy(m: int, n: int) -> None:
    # a prime sequence length (197) or vocabulary-like width has no vector-sized divisor: the
    # fallback tile is sized to the registers anyway, the tail rows guarded, the last panel padded
    cfg, sch, (data, weight, bias, out) = fused_dense(m, n, 7, ZEN3)
    mr, nr = cfg["tile_y"].size[-1], cfg["tile_x"].size[-1]
    if ragged_rows(m):  # several rows per tile, not the single row 197's divisors allow
        assert mr > 1 and mr * -(-nr // 8) >= 8
    if ragged_columns(n, 64):
        assert nr % 8 == 0 and tuple(weight.shape) == (-(-n // nr), 7, nr)
    mod = build(sch, [data, weight, bias, out], target=ZEN3)
    rng = np.random.default_rng(m + n)
    x = rng.standard_normal((m, 7)).astype("float32")
    w = rng.standard_normal((n, 7)).astype("float32")
    b = rng.standard_normal(n).astype("float32")
    got = np.zeros((m, n), dtype="float32")
    mod(x, pack_dense_weight(w, nr), b, got)
    np.testing.assert_allclose(got, np.maximum(x @ w.T + b, 0), rtol=1e-4, atol=1e-4)


def test_ragged_shapes_are_what_has_no_vector_sized_divisor() -> None:
    assert ragged_rows(197) and ragged_rows(17) and not ragged_rows(128) and not ragged_rows(13)
    assert not ragged_rows(196)  # 196 = 4 * 49: tiles of 4 or 7 rows divide it
    assert ragged_columns(50257, 64) and ragged_columns(197, 64) and not ragged_columns(1000, 64)
    assert not ragged_columns(50, 64)  # narrower than one panel: one panel of 50
    assert panel_widths(197, 64) == [1, 8, 16, 32, 48, 64]
    assert tile_rows(197) == list(range(1, 17)) and tile_rows(128) == [1, 2, 4, 8, 16]


def test_a_ragged_space_offers_register_tiles_past_the_shape() -> None:
    space = autotvm_task.create("dense.x86", (197, 50257, 768, "float32"), ZEN3).config_space
    rows = {e.size[-1] for e in space.space_map["tile_y"].entities}
    panels = {e.size[-1] for e in space.space_map["tile_x"].entities}
    assert rows == set(range(1, 17)) and {16, 32, 48, 64} <= panels


@pytest.mark.parametrize("m, panels, lanes, registers, total", [
    (197, [1, 16, 32, 48, 64], 16, 29, 32),  # AVX-512, ViT's 197 rows: 7 x 64 would need 33 registers
    (128, [16, 32, 48, 64], 16, 29, 32),
    (2, [8, 40], 8, 12, 16),  # AVX2
    (16, [8, 40], 8, 12, 16),
])
def test_a_tile_of_several_rows_keeps_its_panel_vectors_in_registers_too(m, panels, lanes, registers,
                                                                          total) -> None:
    mr, nr = fallback_gemm_tile(m, panels, lanes, registers, total)
    vectors = -(-nr // lanes)
    assert mr * vectors <= registers and mr * vectors + (vectors if mr > 1 else 1) + 1 <= total
    assert mr * vectors >= registers // 2  # and still enough accumulators to hide the FMA latency
