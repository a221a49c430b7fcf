"""conv2d_NCHWc_winograd.x86: Winograd F(2x2 / 4x4, 3x3) on blocked data with a transformed kernel.

Tolerances: float32 Winograd rounds the transformed kernel and the transformed tiles (entries up to
5 x 5 for B and 8 x 8 for A with m = 4), so its error against a float64 direct convolution is
about 1e-5 of the output's largest magnitude (F(2x2, 3x3): about 1e-6); the tests allow
``rtol = 1e-4`` and ``atol = 1e-4 * max|expected|``.
"""

from __future__ import annotations

import numpy as np
import pytest

from tunecli.engine import te
from tunecli.engine.build import build, lower
from tunecli.engine.ops import reference as ref
from tunecli.engine.ops import registry
from tunecli.engine.ops.x86.conv2d_nchwc import CONV2D_NCHWC
from tunecli.engine.ops.x86.conv2d_winograd import (
    CONV2D_NCHWC_WINOGRAD,
    fallback_tile_size,
    tile_size_cost,
)
from tunecli.engine.target import Target
from tunecli.engine.task import task as autotvm_task
from tunecli.engine.task.fallback_config import FallbackConfigEntity
from tunecli.errors import InstantiationError

NAME = "conv2d_NCHWc_winograd.x86"


def workload(c, k, h, w, padding=(1, 1, 1, 1), strides=(1, 1), kernel=(3, 3), dilation=(1, 1)):
    return (("TENSOR", (1, c, h, w), "float32"), ("TENSOR", (k, c, *kernel), "float32"), strides, padding,
            dilation, "NCHW", "NCHW", "float32")


def assert_close_to_direct(task, config, rng):
    """Build ``config``, run it on a random image and a transformed random kernel, compare with
    numpy's direct convolution."""
    sch, bufs = task.instantiate(config)
    mod = build(sch, bufs, target="llvm")
    data_t, kernel_t, strides, padding = task.args[:4]
    data = rng.standard_normal(data_t[1]).astype("float32")
    kernel = rng.standard_normal(kernel_t[1]).astype("float32")
    ic_bn, oc_bn, alpha = bufs[0].shape[-1], bufs[-1].shape[-1], bufs[1].shape[0]
    out = np.zeros(bufs[-1].shape, dtype="float32")
    mod(ref.nchw_to_nchwc(data, ic_bn), ref.winograd_kernel_transform(kernel, alpha - 2, ic_bn, oc_bn), out)
    want = ref.conv2d_nchw_python(data, kernel, strides, padding)
    np.testing.assert_allclose(ref.nchwc_to_nchw(out), want, rtol=1e-4, atol=1e-4 * np.abs(want).max(),
                               err_msg=str(config))


def configs_of_both_tile_sizes(task, rng, count):
    """``count`` random configs of each tile size m."""
    space = task.config_space
    by_m = {2: [], 4: []}
    for index in rng.permutation(len(space)):
        config = space.get(int(index))
        if len(by_m[config["tile_m"].val]) < count:
            by_m[config["tile_m"].val].append(config)
        if all(len(v) == count for v in by_m.values()):
            break
    return by_m[2] + by_m[4]


@pytest.mark.parametrize("m", [2, 4])
@pytest.mark.parametrize("shape", [(8, 16, 6, 5), (16, 8, 7, 7), (8, 8, 14, 13)])
def test_numpy_winograd_equals_direct_convolution(m, shape):
    c, k, h, w = shape
    rng = np.random.default_rng(m * 100 + h)
    data = rng.standard_normal((1, c, h, w)).astype("float32")
    kernel = rng.standard_normal((k, c, 3, 3)).astype("float32")
    transformed = ref.winograd_kernel_transform(kernel, m, 4, 8)
    assert transformed.shape == (m + 2, m + 2, k // 8, c // 4, 4, 8)
    got = ref.conv2d_winograd_NCHWc_python(ref.nchw_to_nchwc(data, 4), transformed, (1, 1), (1, 1, 1, 1))
    want = ref.conv2d_nchw_python(data, kernel, 1, 1)
    np.testing.assert_allclose(ref.nchwc_to_nchw(got), want, rtol=1e-4, atol=1e-4 * np.abs(want).max())


@pytest.mark.parametrize("m", [2, 4])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_kernel_transform_is_g_k_gt_per_kernel_blocked(m, dtype):
    rng = np.random.default_rng(m)
    kernel = rng.standard_normal((16, 8, 3, 3)).astype(dtype)
    _, _, g = ref.winograd_matrices(m)
    got = ref.winograd_kernel_transform(kernel, m, 4, 8)
    assert got.dtype == kernel.dtype and got.flags.c_contiguous
    assert got.shape == (m + 2, m + 2, 2, 2, 4, 8)
    for o, i in [(0, 0), (5, 3), (15, 7), (9, 6)]:
        want = g @ kernel[o, i].astype(np.float64) @ g.T
        np.testing.assert_allclose(got[:, :, o // 8, i // 4, i % 4, o % 8], want, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("args", [
    workload(16, 16, 9, 11),  # tiles with a remainder in both directions, for m = 2 and m = 4
    pytest.param(workload(8, 16, 6, 7, padding=(1, 0, 1, 0)), marks=pytest.mark.slow),  # asymmetric padding
    pytest.param(workload(8, 8, 8, 8, padding=(0, 0, 0, 0)), marks=pytest.mark.slow),  # no padding
], ids=["remainders", "asymmetric-padding", "no-padding"])
def test_random_configs_equal_numpy(args):
    rng = np.random.default_rng(7)
    task = autotvm_task.create(NAME, args, "llvm")
    for config in configs_of_both_tile_sizes(task, rng, 1):
        assert_close_to_direct(task, config, rng)


# ResNet-18's 3x3 stride-1 layers with fewer channels: the same spatial sizes and tile remainders.
RESNET_SMALL = [workload(16, 16, 56, 56), workload(32, 32, 28, 28), workload(32, 64, 14, 14),
                workload(64, 32, 7, 7)]


@pytest.mark.slow
@pytest.mark.parametrize("args", RESNET_SMALL, ids=["56x56", "28x28", "14x14", "7x7"])
def test_resnet_shapes_equal_numpy(args):
    rng = np.random.default_rng(args[0][1][2])
    task = autotvm_task.create(NAME, args, "llvm")
    for config in [FallbackConfigEntity(), *configs_of_both_tile_sizes(task, rng, 1)]:
        assert_close_to_direct(task, config, rng)


def test_fallback_config_of_a_resnet_shape_equals_numpy():
    task = autotvm_task.create(NAME, workload(64, 32, 7, 7), "llvm")
    assert_close_to_direct(task, FallbackConfigEntity(), np.random.default_rng(3))


@pytest.mark.parametrize("args", [
    workload(8, 8, 8, 8, kernel=(1, 1), padding=(0, 0, 0, 0)),
    workload(8, 8, 8, 8, kernel=(5, 5), padding=(2, 2, 2, 2)),
    workload(8, 8, 8, 8, strides=(2, 2)),
    workload(8, 8, 8, 8, dilation=(2, 2), padding=(2, 2, 2, 2)),
], ids=["1x1", "5x5", "stride2", "dilation2"])
def test_other_workloads_are_instantiation_errors(args):
    with pytest.raises(InstantiationError, match="only 3x3 kernels with stride 1 and dilation 1"):
        autotvm_task.create(NAME, args, "llvm")


def test_fallback_config_is_vectorized_and_register_tiled():
    avx2 = Target("llvm -mcpu=znver3 -mattr=+avx2,+fma")  # 8 float32 lanes, 16 vector registers
    with avx2:
        task = autotvm_task.create(NAME, workload(64, 64, 56, 56), avx2)
        config = FallbackConfigEntity()
        sch, bufs = task.instantiate(config)
    assert config["tile_m"].val == 4
    assert config["tile_oc"].size[-1] == 16 and config["tile_ic"].size[-1] == 8
    assert config["tile_p"].val * 2 <= 12  # accumulator vectors of the GEMM's register tile
    text = str(lower(sch, bufs))
    assert "allocate winograd_gemm.local[float32 * 96], local" in text  # 6 tiles x 16 channels
    for loop in ("vectorized for (ki.c, 0, 16)", "vectorized for (ci, 0, 8)", "vectorized for (ki, 0, 16)"):
        assert loop in text
    assert "unrolled for (pi.c, 0, 6)" in text


@pytest.mark.parametrize(("cpu", "size", "m"), [
    ("znver4", 56, 4), ("znver4", 28, 4), ("znver4", 17, 4), ("znver4", 16, 2), ("znver4", 14, 2),
    ("znver4", 13, 2), ("znver4", 7, 2),
    ("haswell", 28, 4), ("haswell", 14, 4), ("haswell", 7, 4), ("haswell", 5, 4), ("haswell", 4, 2),
])
def test_fallback_tile_size_is_the_roofline_least_of_streaming_and_multiply_adds(cpu, size, m):
    """With 512-bit vectors F(4x4)'s 2.25x larger kernel, used by 16 tiles of a 13-16-pixel image,
    takes longer to stream than F(2x2)'s multiply-adds over its 49-64 tiles; larger images keep
    F(4x4).  With 256-bit vectors F(4x4) is kept down to 5x5 images (4 tiles)."""
    target = Target(f"llvm -mcpu={cpu}")
    with target:
        config = FallbackConfigEntity()
        autotvm_task.create(NAME, workload(64, 64, size, size), target).instantiate(config)
    assert config["tile_m"].val == m
    lanes = 16 if cpu == "znver4" else 8
    assert fallback_tile_size((size, size), lanes) == m
    costs = {t: tile_size_cost((size, size), t, lanes) for t in (2, 4)}
    assert costs[m] <= costs[6 - m] and (costs[m] < costs[6 - m] or m == 4)


def test_tile_size_cost_is_kernel_elements_times_the_longer_of_streaming_and_uses():
    assert tile_size_cost((14, 14), 4, 16) == 36 * 32  # 16 tiles: streaming the kernel bounds it
    assert tile_size_cost((14, 14), 2, 16) == 16 * 49  # 49 tiles: the multiply-adds bound it
    assert tile_size_cost((56, 56), 4, 8) == 36 * 196


def test_flops_are_the_direct_convolutions():
    task = autotvm_task.create(NAME, workload(16, 32, 9, 11), "llvm")
    assert task.flop == 2 * 32 * 16 * 9 * 11 * 9


def test_graph_form_transforms_the_kernel_in_a_stage():
    """On NCHW data and an OIHW kernel (a graph's tensors) the compute blocks the data and
    transforms the kernel by stages."""
    rng = np.random.default_rng(5)
    task = autotvm_task.create(NAME, workload(8, 16, 9, 7), "llvm")
    config = configs_of_both_tile_sizes(task, rng, 1)[1]
    data = te.placeholder((1, 8, 9, 7), name="data")
    kernel = te.placeholder((16, 8, 3, 3), name="kernel")
    out = CONV2D_NCHWC_WINOGRAD.compute(config, data, kernel, (1, 1), (1, 1, 1, 1), (1, 1), "NCHW", "NCHW",
                                        "float32")
    mod = build(CONV2D_NCHWC_WINOGRAD.schedule(config, [out]), [data, kernel, out], target="llvm")
    data_np = rng.standard_normal((1, 8, 9, 7)).astype("float32")
    kernel_np = rng.standard_normal((16, 8, 3, 3)).astype("float32")
    got = np.zeros(out.shape, dtype="float32")
    mod(data_np, kernel_np, got)
    want = ref.conv2d_nchw_python(data_np, kernel_np, 1, 1)
    np.testing.assert_allclose(ref.nchwc_to_nchw(got), want, rtol=1e-4, atol=1e-4 * np.abs(want).max())


def test_conv2d_selection_is_unchanged():
    """The Winograd row has an operator key of its own: conv2d still selects conv2d_NCHWc.x86."""
    assert registry.STRATEGIES.select("conv2d_NCHWc", "llvm") is CONV2D_NCHWC
    assert registry.STRATEGIES.select("conv2d_NCHWc_winograd", "llvm") is CONV2D_NCHWC_WINOGRAD
