"""conv2d_NCHWc.x86: TVM's workload and space, so TVM's pre-tuned x86 records decode and build here."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.engine.autotvm_templates import tophub_dir
from tunecli.engine import te
from tunecli.engine.build import build, lower
from tunecli.engine.log.record import load_from_file
from tunecli.engine.log.task_records import denotes
from tunecli.engine.ops import reference as ref
from tunecli.engine.ops import registry
from tunecli.engine.ops.nn import relu
from tunecli.engine.ops.x86.conv2d_nchwc import (
    CONV2D_NCHWC,
    infer_layout,
    network_channel_block,
    output_channel_block,
    register_block,
    vector_ops,
)
from tunecli.engine.ops.x86.conv2d_winograd import CONV2D_NCHWC_WINOGRAD
from tunecli.engine.target import Target
from tunecli.engine.task import task as autotvm_task
from tunecli.engine.task.fallback_config import FallbackConfigEntity
from tunecli.engine.task.space import ConfigSpace

# Records of llvm_v0.04.log built in `make test` (the stem, a 3x3, 1x1 with tile_oh 2 and 1);
# the others are marked slow.
FAST_RECORDS = {0, 9, 21, 24}


def tophub_records():
    records = load_from_file(tophub_dir() / "llvm_v0.04.log")
    return [r for r in records if r[0].task.name == "conv2d_NCHWc.x86"]


def workload(data, kernel, strides, padding, dtype="float32", out_dtype="float32", dilation=(1, 1)):
    return (("TENSOR", data, dtype), ("TENSOR", kernel, dtype), strides, padding, dilation, "NCHW", "NCHW",
            out_dtype)


def run_config(task, config, rng):
    """Build ``config`` of ``task``, run it on random blocked inputs; return (output, numpy's)."""
    sch, bufs = task.instantiate(config)
    mod = build(sch, bufs, target="llvm")
    if np.dtype(bufs[0].dtype).kind == "i":
        inputs = [rng.integers(-128, 128, size=b.shape).astype(b.dtype) for b in bufs[:-1]]
    else:
        inputs = [rng.standard_normal(b.shape).astype(b.dtype) for b in bufs[:-1]]
    out = np.zeros(bufs[-1].shape, dtype=bufs[-1].dtype)
    mod(*inputs, out)
    return out, task.reference(*inputs)


def test_every_tophub_x86_config_index_decodes_to_its_logged_entity():
    records = tophub_records()
    assert len(records) == 35
    for inp, _ in records:
        task = autotvm_task.create(inp.task.name, inp.task.args, "llvm")
        assert task.workload == inp.task.workload
        assert denotes(task.config_space, inp.config), (inp.task.args, inp.config)


def test_space_has_tvms_knobs_in_tvms_order():
    conv3 = autotvm_task.create("conv2d_NCHWc.x86", workload((1, 64, 56, 56), (64, 64, 3, 3), (1, 1),
                                                             (1, 1, 1, 1)), "llvm").config_space
    assert list(conv3.space_map) == ["tile_ic", "tile_oc", "tile_ow", "unroll_kw"]
    assert conv3.space_map["unroll_kw"].entities[0].val is True
    conv1 = autotvm_task.create("conv2d_NCHWc.x86", workload((1, 64, 56, 56), (64, 64, 1, 1), (1, 1),
                                                             (0, 0, 0, 0)), "llvm").config_space
    assert list(conv1.space_map) == ["tile_ic", "tile_oc", "tile_ow", "tile_oh"]
    assert [e.val for e in conv1.space_map["tile_oh"].entities] == [1, 2]
    assert max(e.size[-1] for e in conv1.space_map["tile_ow"].entities) == 56
    wide = autotvm_task.create("conv2d_NCHWc.x86", workload((1, 3, 224, 224), (64, 3, 3, 3), (1, 1),
                                                            (1, 1, 1, 1)), "llvm").config_space
    assert max(e.size[-1] for e in wide.space_map["tile_ow"].entities) == 56  # inner <= 64


@pytest.mark.parametrize("index", [pytest.param(i, marks=[] if i in FAST_RECORDS else [pytest.mark.slow])
                                   for i in range(35)])
def test_tophub_config_builds_a_kernel_equal_to_numpy(index):
    inp, _ = tophub_records()[index]
    task = autotvm_task.create(inp.task.name, inp.task.args, "llvm")
    got, want = run_config(task, inp.config, np.random.default_rng(index))
    ic_bn, oc_bn = inp.config["tile_ic"].size[-1], inp.config["tile_oc"].size[-1]
    assert got.shape[-1] == oc_bn and task.instantiate(inp.config)[1][0].shape[-1] == ic_bn
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=2e-3)


@st.composite
def nchwc_case(draw):
    """A small convolution and a random legal config index of its space."""
    k = draw(st.sampled_from([1, 3]))
    stride = draw(st.integers(1, 2))
    pad = tuple(draw(st.integers(0, 1)) for _ in range(4)) if k == 3 else (0, 0, 0, 0)
    dilation = draw(st.integers(1, 2)) if k == 3 else 1
    reach = (k - 1) * dilation + 1  # the dilated window must fit the padded input
    h = draw(st.integers(max(4, reach - pad[0] - pad[2]), 7))
    w = draw(st.integers(max(4, reach - pad[1] - pad[3]), 7))
    ci, co = draw(st.sampled_from([2, 4, 6])), draw(st.sampled_from([4, 8, 12]))
    args = workload((1, ci, h, w), (co, ci, k, k), (stride, stride), pad, dilation=(dilation, dilation))
    space = autotvm_task.create("conv2d_NCHWc.x86", args, "llvm").config_space
    return args, draw(st.integers(0, len(space) - 1))


@settings(max_examples=5, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(nchwc_case(), st.integers(0, 2**31))
def test_random_legal_configs_match_numpy(case, seed):
    args, index = case
    task = autotvm_task.create("conv2d_NCHWc.x86", args, "llvm")
    got, want = run_config(task, task.config_space.get(index), np.random.default_rng(seed))
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def test_fallback_config_is_tvms_on_avx512_with_small_windows_unrolled_and_two_vector_blocks():
    with Target("llvm -mcpu=skylake-avx512"):
        cfg = FallbackConfigEntity()
        CONV2D_NCHWC.kernel_call(cfg, *workload((1, 64, 56, 56), (64, 64, 3, 3), (1, 1), (1, 1, 1, 1)))
        assert [cfg[k].size for k in ("tile_ic", "tile_oc", "tile_ow")] == [[2, 32], [2, 32], [4, 14]]
        assert cfg["unroll_kw"].val is True  # 3 columns unrolled, a tile of half the registers
        stem = FallbackConfigEntity()
        CONV2D_NCHWC.kernel_call(stem, *workload((1, 3, 224, 224), (64, 3, 7, 7), (2, 2), (3, 3, 3, 3)))
        assert stem["tile_ow"].size == [16, 7] and stem["unroll_kw"].val is False  # 7 columns: not unrolled
        assert stem["tile_oc"].size == [2, 32] and stem["tile_ic"].size == [1, 3]  # 3 channels: 2 vectors out
        one = FallbackConfigEntity()
        CONV2D_NCHWC.kernel_call(one, *workload((1, 64, 56, 56), (256, 64, 1, 1), (1, 1), (0, 0, 0, 0)))
        assert one["tile_ow"].size == [2, 28] and one["tile_oh"].val == 1
        assert one["tile_oc"].size == [8, 32]


@pytest.mark.parametrize(("data", "kernel", "stride", "unrolled"), [
    ((1, 16, 14, 14), (32, 16, 3, 3), 1, True), ((1, 16, 14, 14), (32, 16, 3, 3), 2, True),
    ((1, 3, 20, 20), (32, 3, 7, 7), 2, False)])
def test_the_fallbacks_of_windows_equal_numpy(data, kernel, stride, unrolled):
    """3x3: unrolled columns in half the tile where the machine has 32 vector registers, TVM's
    otherwise; 3 input channels: two vectors of output channels there."""
    pad = (kernel[-1] // 2,) * 4
    task = autotvm_task.create("conv2d_NCHWc.x86", workload(data, kernel, (stride, stride), pad), "llvm")
    config = FallbackConfigEntity()
    got, want = run_config(task, config, np.random.default_rng(stride))
    wide = Target("llvm").vector_bits >= 512
    assert config["unroll_kw"].val is (unrolled and wide)
    if data[1] == 3:
        assert config["tile_oc"].size[-1] == (32 if wide else 8)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize(("channels", "lanes", "block"), [
    (1000, 16, 40), (1000, 8, 8), (24, 16, 24), (40, 16, 40), (24, 8, 8), (96, 16, 16), (48, 16, 16),
    (3, 16, 3), (10, 16, 10)])
def test_fallback_channel_block_does_the_most_channels_per_vector_instruction(channels, lanes, block):
    """A whole vector where it divides; otherwise the divisor of at most four vectors with the fewest
    instructions per channel (24 on 16 lanes: 16 + 8 lanes for 24 channels, where blocks of 8 take
    one half-empty vector per 8), the narrower on a tie."""
    assert output_channel_block(channels, lanes) == block
    assert vector_ops(40, 16) == 3 and vector_ops(16, 16) == 1 and vector_ops(12, 16) == 2


@pytest.mark.parametrize(("channels", "lanes", "block"), [
    (64, 16, 32), (2048, 16, 32), (144, 16, 48), (48, 16, 48), (96, 16, 32), (16, 16, 16), (80, 16, 16),
    (24, 16, 24), (1000, 16, 40), (3, 16, 3), (64, 8, 8), (24, 8, 8)])
def test_network_channel_block_is_two_vectors_where_they_do_as_many_channels_per_instruction(
        channels, lanes, block):
    """With 32 vector registers (16 lanes) the narrowest block of at least two vectors among those
    doing the most channels per instruction (each broadcast input feeds two multiply-adds); else,
    and with 16 registers, ``output_channel_block``'s."""
    assert network_channel_block(channels, lanes) == block


def test_fallback_blocks_of_a_bottleneck_chain_without_layout_transforms():
    """ResNet-50's 7x7 stem, 1x1, Winograd 3x3 and strided 1x1 fallbacks on AVX-512: each reads the
    block its producer writes (two vectors); on AVX2 the direct ones agree on one vector."""
    stem = (CONV2D_NCHWC, workload((1, 3, 224, 224), (64, 3, 7, 7), (2, 2), (3, 3, 3, 3)))
    reduce = (CONV2D_NCHWC, workload((1, 64, 56, 56), (64, 64, 1, 1), (1, 1), (0, 0, 0, 0)))
    winograd = (CONV2D_NCHWC_WINOGRAD, workload((1, 64, 56, 56), (64, 64, 3, 3), (1, 1), (1, 1, 1, 1)))
    expand = (CONV2D_NCHWC, workload((1, 64, 56, 56), (256, 64, 1, 1), (1, 1), (0, 0, 0, 0)))
    down = (CONV2D_NCHWC, workload((1, 256, 56, 56), (512, 256, 1, 1), (2, 2), (0, 0, 0, 0)))
    chain = [stem, reduce, winograd, expand, down]

    def blocks(target):
        with Target(target):
            configs = [FallbackConfigEntity() for _ in chain]
            for (strategy, args), cfg in zip(chain, configs, strict=True):
                strategy.kernel_call(cfg, *args)
        return [(cfg["tile_ic"].size[-1], cfg["tile_oc"].size[-1]) for cfg in configs]

    assert blocks("llvm -mcpu=skylake-avx512") == [(3, 32), (32, 32), (32, 32), (32, 32), (32, 32)]
    assert blocks("llvm -mcpu=haswell -mattr=+avx2,+fma") == [(3, 8), (8, 8), (8, 16), (8, 8), (8, 8)]


@pytest.mark.parametrize(("data", "kernel", "stride"), [
    ((1, 64, 14, 14), (96, 64, 1, 1), 2), ((1, 96, 7, 7), (64, 96, 1, 1), 1),
    ((1, 64, 9, 9), (32, 64, 3, 3), 2)])
def test_two_vector_fallbacks_of_avx512_equal_numpy(data, kernel, stride):
    pad = (kernel[-1] // 2,) * 4
    task = autotvm_task.create("conv2d_NCHWc.x86", workload(data, kernel, (stride, stride), pad), "llvm")
    config = FallbackConfigEntity()
    with Target("llvm -mcpu=skylake-avx512"):
        task.instantiate(config)
    assert config["tile_ic"].size[-1] == 32 and config["tile_oc"].size[-1] == 32
    got, want = run_config(task, config, np.random.default_rng(stride))
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def test_fallback_input_block_is_the_block_a_fallback_producer_writes():
    with Target("llvm -mcpu=skylake-avx512"):
        cfg = FallbackConfigEntity()
        CONV2D_NCHWC.kernel_call(cfg, *workload((1, 24, 56, 56), (144, 24, 1, 1), (1, 1), (0, 0, 0, 0)))
        producer = FallbackConfigEntity()
        CONV2D_NCHWC.kernel_call(producer, *workload((1, 144, 56, 56), (24, 144, 1, 1), (1, 1), (0, 0, 0, 0)))
    assert cfg["tile_ic"].size == [1, 24] and producer["tile_oc"].size == [1, 24]


def test_fallback_register_tile_fits_sixteen_avx2_registers():
    with Target("llvm -mcpu=haswell -mattr=+avx2,+fma"):
        cfg = FallbackConfigEntity()
        call = CONV2D_NCHWC.kernel_call(cfg, *workload((1, 64, 56, 56), (64, 64, 3, 3), (1, 1), (1, 1, 1, 1)))
    assert cfg["tile_oc"].size[-1] == 8 and cfg["tile_ow"].size[-1] == 14
    assert cfg["unroll_kw"].val is False  # TVM's: with 16 registers unrolled columns are slower
    assert [tuple(t.shape) for t in call.inputs] == [(1, 8, 56, 56, 8), (8, 8, 3, 3, 8, 8)]


def test_kernel_is_register_blocked_vectorized_and_parallel():
    args = workload((1, 16, 8, 8), (32, 16, 3, 3), (1, 1), (1, 1, 1, 1))
    task = autotvm_task.create("conv2d_NCHWc.x86", args, "llvm")
    space = task.config_space
    knobs = [[e.size for e in space.space_map["tile_ic"].entities].index([-1, 8]),
             [e.size for e in space.space_map["tile_oc"].entities].index([-1, 16]),
             [e.size for e in space.space_map["tile_ow"].entities].index([-1, 4]), 0]
    sch, bufs = task.instantiate(space.get(space.knob2point(knobs)))
    text = str(lower(sch, bufs))
    assert [tuple(b.shape) for b in bufs] == [(1, 2, 8, 8, 8), (2, 2, 3, 3, 8, 16), (1, 2, 8, 8, 16)]
    assert "conv2d_NCHWc.local[float32 * 64]" in text  # reg_n x oc_bn = 4 x 16 accumulators
    assert "parallel for (b.oc.fused.y.fused, 0, 16)" in text
    assert "unrolled for (kw, 0, 3)" in text and "vectorized for (ob.c, 0, 16)" in text


def test_one_by_one_kernel_is_a_packed_gemm_with_row_tiles():
    args = workload((1, 8, 4, 6), (16, 8, 1, 1), (1, 1), (0, 0, 0, 0))
    task = autotvm_task.create("conv2d_NCHWc.x86", args, "llvm")
    space = task.config_space
    cfg = next(space.get(i) for i in range(len(space)) if space.get(i)["tile_oh"].val == 2
               and space.get(i)["tile_ow"].size[-1] == 3 and space.get(i)["tile_oc"].size[-1] == 8)
    text = str(lower(*task.instantiate(cfg)))
    assert "unrolled for (y.c, 0, 2)" in text and "unrolled for (x.c, 0, 3)" in text
    got, want = run_config(task, cfg, np.random.default_rng(3))
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_nchw_tensors_are_packed_by_stages_of_the_kernel():
    data = te.placeholder((1, 4, 5, 5), name="data")
    kernel = te.placeholder((8, 4, 3, 3), name="kernel")
    cfg = ConfigSpace()
    (out,) = CONV2D_NCHWC.outputs_of(cfg, CONV2D_NCHWC.declare(data, kernel, (1, 1), (1, 1, 1, 1)))
    oc_bn = cfg["tile_oc"].size[-1]
    assert tuple(out.shape) == (1, 8 // oc_bn, 5, 5, oc_bn)
    sch = CONV2D_NCHWC.schedule(cfg, [out])
    assert "data_vec" in str(lower(sch, [data, kernel, out]))
    mod = build(sch, [data, kernel, out], target="llvm")
    rng = np.random.default_rng(4)
    a = rng.standard_normal((1, 4, 5, 5)).astype("float32")
    w = rng.standard_normal((8, 4, 3, 3)).astype("float32")
    got = np.zeros(out.shape, dtype="float32")
    mod(a, w, got)
    want = ref.conv2d_nchw_python(a, w, 1, 1)
    np.testing.assert_allclose(ref.nchwc_to_nchw(got), want, rtol=1e-5, atol=1e-5)


def test_blocked_numpy_helpers_are_inverse_layouts():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((2, 12, 3, 4))
    w = rng.standard_normal((8, 12, 3, 3))
    assert np.array_equal(ref.nchwc_to_nchw(ref.nchw_to_nchwc(a, 4)), a)
    packed = ref.oihw_to_kernel_nchwc(w, 4, 8)
    assert packed.shape == (1, 3, 3, 3, 4, 8) and packed[0, 1, 2, 0, 3, 5] == w[5, 7, 2, 0]
    assert np.array_equal(ref.kernel_nchwc_to_oihw(packed), w)


def test_workload_is_tvms_and_strategy_is_selected_by_operator():
    strategy = registry.STRATEGIES.select("conv2d_NCHWc", "llvm")
    assert strategy is CONV2D_NCHWC
    assert strategy.arg_names == ("data", "kernel", "strides", "padding", "dilation", "layout", "out_layout",
                                  "out_dtype")


def test_infer_layout_names_the_blocked_layouts_of_a_config():
    inp, _ = tophub_records()[2]  # 64 -> 128 channels, 3x3, stride 2: tile_ic 32, tile_oc 64
    (data,), (out,) = infer_layout(inp.task.workload, inp.config)
    assert data == ((1, 2, 56, 56, 32), "NCHW32c")
    assert out == ((1, 2, 28, 28, 64), "NCHW64c")
    depthwise = ("depthwise_conv2d_NCHWc.x86", ("TENSOR", (1, 32, 8, 8), "float32"),
                 ("TENSOR", (32, 1, 3, 3), "float32"), (2, 2), (1, 1, 1, 1), (1, 1), "NCHW", "NCHW",
                 "float32")
    cfg = FallbackConfigEntity()
    with Target("llvm -mcpu=skylake-avx512"):
        registry.get_strategy("depthwise_conv2d_NCHWc.x86").kernel_call(cfg, *depthwise[1:])
    assert infer_layout(depthwise, cfg)[1][0] == ((1, 1, 4, 4, 32), "NCHW32c")  # two AVX-512 vectors


@pytest.mark.parametrize("kernel_hw", [3, 1])
def test_an_unpack_epilogue_gives_tvms_conv2d_nchw(kernel_hw):
    """NCHW in, packing stages, relu(unpack(conv)) out: TVM's conv2d_nchw.x86 on x86, one kernel."""
    data = te.placeholder((1, 8, 6, 6), name="data")
    kernel = te.placeholder((16, 8, kernel_hw, kernel_hw), name="kernel")
    pad = (1, 1, 1, 1) if kernel_hw == 3 else (0, 0, 0, 0)
    args = workload((1, 8, 6, 6), (16, 8, kernel_hw, kernel_hw), (1, 1), pad)
    space = autotvm_task.create("conv2d_NCHWc.x86", args, "llvm").config_space
    cfg = next(space.get(i) for i in range(len(space)) if space.get(i)["tile_oc"].size[-1] == 8
               and space.get(i)["tile_ow"].size[-1] == 3 and space.get(i)["tile_ic"].size[-1] == 4)
    (conv,) = CONV2D_NCHWC.outputs_of(cfg, CONV2D_NCHWC.declare(data, kernel, (1, 1), pad))
    unpacked = te.compute((1, 16, 6, 6), lambda b, c, y, x: conv[b, c // 8, y, x, c % 8], name="unpack",
                          tag="injective")
    fused = relu(unpacked)
    sch = CONV2D_NCHWC.schedule(cfg, [conv], epilogue=fused)
    text = str(lower(sch, [data, kernel, fused]))
    assert "allocate conv2d_NCHWc[float32 * 24], local" in text  # one 3 x 8 register block
    assert "unpack[" not in text and "vectorized for (i1.inner, 0, 8)" in text  # 8 channels of NCHW
    mod = build(sch, [data, kernel, fused], target="llvm")
    rng = np.random.default_rng(kernel_hw)
    a = rng.standard_normal((1, 8, 6, 6)).astype("float32")
    w = rng.standard_normal(kernel.shape).astype("float32")
    got = np.zeros((1, 16, 6, 6), dtype="float32")
    mod(a, w, got)
    want = np.maximum(ref.conv2d_nchw_python(a, w, 1, pad), 0)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_register_block_keeps_the_accumulators_in_the_vector_registers():
    with Target("llvm -mcpu=haswell -mattr=+avx2,+fma"):  # 16 registers of 8 floats
        assert register_block(7, 8) == 7 and register_block(14, 8) == 14
        assert register_block(7, 16) == 4  # 4 + 3 columns of 2 vectors
        assert register_block(7, 32) == 2 and register_block(28, 8) == 14
    with Target("llvm -mcpu=skylake-avx512"):  # 32 registers of 16 floats
        assert register_block(7, 32) == 7 and register_block(28, 16) == 28


@pytest.mark.parametrize("k, knobs", [(1, {"tile_oc": 32, "tile_ow": 7, "tile_oh": 2}),
                                      (1, {"tile_oc": 16, "tile_ow": 7, "tile_oh": 1}),
                                      (3, {"tile_oc": 16, "tile_ow": 7, "unroll_kw": True}),
                                      (3, {"tile_oc": 32, "tile_ow": 7, "unroll_kw": False})])
def test_tiles_larger_than_the_registers_are_reduced_in_blocks_and_stay_correct(k, knobs):
    args = workload((1, 16, 7, 7), (32, 16, k, k), (1, 1), (k // 2,) * 4)
    avx2 = Target("llvm -mcpu=haswell -mattr=+avx2,+fma")
    with avx2:
        task = autotvm_task.create("conv2d_NCHWc.x86", args, avx2)
        space = task.config_space
        cfg = next(c for c in map(space.get, range(len(space))) if all(
            (c[name].size[-1] if name.startswith("tile_o") and name != "tile_oh" else c[name].val) == want
            for name, want in knobs.items()))
        sch, bufs = task.instantiate(cfg)
        text = str(lower(sch, bufs))
        mod = build(sch, bufs, target=avx2)
    assert "x.c.outer" in text  # the columns are reduced in register blocks
    rng = np.random.default_rng(k)
    inputs = [rng.standard_normal(b.shape).astype("float32") for b in bufs[:-1]]
    out = np.zeros(bufs[-1].shape, "float32")
    mod(*inputs, out)
    np.testing.assert_allclose(out, task.reference(*inputs), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("tile_oc, whole_reduction", [(16, True), (32, False)])
def test_one_by_one_blocks_of_four_columns_or_more_reduce_all_input_channels_in_turn(tile_oc,
                                                                                     whole_reduction):
    """7 columns of 2 vectors (blocks of 4 + 3) are each reduced over every input channel, so
    their accumulators stay in registers; blocks of 2 columns of 4 vectors take turns inside
    the loop over input-channel blocks, sharing its weights from L1."""
    args = workload((1, 32, 7, 7), (64, 32, 1, 1), (1, 1), (0, 0, 0, 0))
    avx2 = Target("llvm -mcpu=haswell -mattr=+avx2,+fma")
    with avx2:
        task = autotvm_task.create("conv2d_NCHWc.x86", args, avx2)
        space = task.config_space
        cfg = next(c for c in map(space.get, range(len(space)))
                   if c["tile_ic"].size[-1] == 8 and c["tile_oc"].size[-1] == tile_oc
                   and c["tile_ow"].size[-1] == 7 and c["tile_oh"].val == 1)
        sch, bufs = task.instantiate(cfg)
        text = str(lower(sch, bufs))
    reduction = text[text.index("for (ic_chunk"):]
    assert ("for (x.c.outer" in reduction) != whole_reduction
    got, want = run_config(task, cfg, np.random.default_rng(5))
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
