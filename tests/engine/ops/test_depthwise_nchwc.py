"""depthwise_conv2d_NCHWc.x86: TVM's workload and knobs on blocked MobileNet layers."""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tunecli.engine import te
from tunecli.engine.build import build, lower
from tunecli.engine.ops import reference as ref
from tunecli.engine.ops import registry
from tunecli.engine.ops.x86.depthwise_nchwc import DEPTHWISE_CONV2D_NCHWC
from tunecli.engine.target import Target
from tunecli.engine.task import task as autotvm_task
from tunecli.engine.task.fallback_config import FallbackConfigEntity


def workload(c, hw, stride, dtype="float32", out_dtype="float32"):
    return (("TENSOR", (1, c, hw, hw), dtype), ("TENSOR", (c, 1, 3, 3), dtype), (stride, stride),
            (1, 1, 1, 1), (1, 1), "NCHW", "NCHW", out_dtype)


def test_space_has_tvms_knobs_in_tvms_order():
    space = autotvm_task.create("depthwise_conv2d_NCHWc.x86", workload(32, 112, 1), "llvm").config_space
    assert list(space.space_map) == ["tile_ic", "tile_oc", "tile_ow", "unroll_kw"]
    assert len(space) == 6 * 6 * 9 * 2  # divisors of 32, 32, and of 112 up to 64; two unroll options
    assert registry.STRATEGIES.select("depthwise_conv2d_NCHWc", "llvm") is DEPTHWISE_CONV2D_NCHWC


def test_fallback_config_unrolls_the_window_in_register_tiles_of_half_the_registers():
    """The blocks of ``conv2d_NCHWc.x86``'s network fallback (two AVX-512 vectors; TVM: one); the
    window's columns unrolled (TVM: not) and at most 15 accumulator vectors on AVX-512's 32
    registers (7 columns of two vectors; TVM: 31 columns of one), 7 on AVX2's 16."""
    with Target("llvm -mcpu=skylake-avx512"):
        cfg = FallbackConfigEntity()
        call = DEPTHWISE_CONV2D_NCHWC.kernel_call(cfg, *workload(32, 112, 1))
        sixteen = FallbackConfigEntity()
        DEPTHWISE_CONV2D_NCHWC.kernel_call(sixteen, *workload(16, 112, 1))
    assert [cfg[k].size for k in ("tile_ic", "tile_oc", "tile_ow")] == [[1, 32], [1, 32], [16, 7]]
    assert cfg["unroll_kw"].val is True
    assert [tuple(t.shape) for t in call.inputs] == [(1, 1, 112, 112, 32), (1, 1, 3, 3, 1, 32)]
    assert sixteen["tile_oc"].size == [1, 16] and sixteen["tile_ow"].size == [8, 14]
    with Target("llvm -mcpu=haswell -mattr=+avx2,+fma"):
        avx2 = FallbackConfigEntity()
        DEPTHWISE_CONV2D_NCHWC.kernel_call(avx2, *workload(32, 112, 1))
    assert avx2["tile_oc"].size == [4, 8] and avx2["tile_ow"].size == [16, 7]


@st.composite
def depthwise_case(draw):
    """A small depthwise convolution (any padding, stride, dilation) and a legal config index."""
    stride, dilation = draw(st.integers(1, 2)), draw(st.integers(1, 2))
    pad = tuple(draw(st.integers(0, 2)) for _ in range(4))
    h, w = draw(st.integers(5, 9)), draw(st.integers(5, 9))
    c = draw(st.sampled_from([4, 8, 16]))
    args = (("TENSOR", (1, c, h, w), "float32"), ("TENSOR", (c, 1, 3, 3), "float32"), (stride, stride), pad,
            (dilation, dilation), "NCHW", "NCHW", "float32")
    space = autotvm_task.create("depthwise_conv2d_NCHWc.x86", args, "llvm").config_space
    return args, draw(st.integers(0, len(space) - 1))


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(depthwise_case(), st.integers(0, 2**31))
def test_random_legal_configs_read_the_padding_right(case, seed):
    """Padding is read through bound checks: every border, stride and dilation equals numpy."""
    args, index = case
    task = autotvm_task.create("depthwise_conv2d_NCHWc.x86", args, "llvm")
    sch, bufs = task.instantiate(task.config_space.get(index))
    assert "data_pad[" not in str(lower(sch, bufs))  # no padded copy
    mod = build(sch, bufs, target="llvm")
    rng = np.random.default_rng(seed)
    inputs = [rng.standard_normal(b.shape).astype("float32") for b in bufs[:-1]]
    out = np.zeros(bufs[-1].shape, dtype="float32")
    mod(*inputs, out)
    np.testing.assert_allclose(out, task.reference(*inputs), rtol=1e-5, atol=1e-5)


def test_mobilenet_layer_is_register_blocked_and_equals_numpy():
    task = autotvm_task.create("depthwise_conv2d_NCHWc.x86", workload(64, 28, 2), "llvm")
    space = task.config_space
    knobs = [[e.size for e in space.space_map["tile_ic"].entities].index([-1, 8]),
             [e.size for e in space.space_map["tile_oc"].entities].index([-1, 16]),
             [e.size for e in space.space_map["tile_ow"].entities].index([-1, 7]), 0]
    cfg = space.get(space.knob2point(knobs))
    sch, bufs = task.instantiate(cfg)
    text = str(lower(sch, bufs))
    assert "depthwise_conv2d_NCHWc.local[float32 * 112]" in text  # 7 columns x 16 channels
    assert "unrolled for (kw, 0, 3)" in text and "parallel for" in text
    mod = build(sch, bufs, target="llvm")
    rng = np.random.default_rng(0)
    inputs = [rng.standard_normal(b.shape).astype("float32") for b in bufs[:-1]]
    out = np.zeros(bufs[-1].shape, dtype="float32")
    mod(*inputs, out)
    np.testing.assert_allclose(out, task.reference(*inputs), rtol=1e-5, atol=1e-5)


def test_int8_accumulates_in_int32():
    task = autotvm_task.create("depthwise_conv2d_NCHWc.x86", workload(8, 6, 1, "int8", "int32"), "llvm")
    sch, bufs = task.instantiate(task.config_space.get(len(task.config_space) - 1))
    mod = build(sch, bufs, target="llvm")
    rng = np.random.default_rng(1)
    inputs = [rng.integers(-128, 128, size=b.shape).astype("int8") for b in bufs[:-1]]
    out = np.zeros(bufs[-1].shape, dtype="int32")
    mod(*inputs, out)
    np.testing.assert_array_equal(out, task.reference(*inputs))


def test_an_unpack_epilogue_gives_an_nchw_depthwise_kernel():
    data = te.placeholder((1, 16, 7, 7), name="data")
    kernel = te.placeholder((16, 1, 3, 3), name="kernel")
    task = autotvm_task.create("depthwise_conv2d_NCHWc.x86", workload(16, 7, 2), "llvm")
    space = task.config_space
    cfg = next(space.get(i) for i in range(len(space)) if space.get(i)["tile_oc"].size[-1] == 8
               and space.get(i)["tile_ic"].size[-1] == 4)
    strategy = DEPTHWISE_CONV2D_NCHWC
    (conv,) = strategy.outputs_of(cfg, strategy.declare(data, kernel, (2, 2), (1, 1, 1, 1)))
    out = te.compute((1, 16, 4, 4), lambda b, c, y, x: conv[b, c // 8, y, x, c % 8], name="unpack",
                     tag="injective")
    sch = strategy.schedule(cfg, [conv], epilogue=out)
    mod = build(sch, [data, kernel, out], target="llvm")
    rng = np.random.default_rng(2)
    a = rng.standard_normal((1, 16, 7, 7)).astype("float32")
    w = rng.standard_normal((16, 1, 3, 3)).astype("float32")
    got = np.zeros((1, 16, 4, 4), dtype="float32")
    mod(a, w, got)
    want = ref.depthwise_conv2d_python_nchw(a, w, 2, 1)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
