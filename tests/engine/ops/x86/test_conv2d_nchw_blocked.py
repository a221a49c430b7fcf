"""conv2d_nchw_blocked.x86 / conv2d_nchw_winograd.x86: NCHW in and out, blocked inside, the weight
prepared once in the config's layout."""

from __future__ import annotations

import re

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tunecli.engine.build import build, lower
from tunecli.engine.ops import reference as ref
from tunecli.engine.ops import registry
from tunecli.engine.ops.x86.conv2d_nchw_1x1 import GEMM_1X1, fallback_pixels, fills_vectors
from tunecli.engine.ops.x86.conv2d_nchw_blocked import (
    BLOCKED,
    WINOGRAD,
    blocked_weight_oihw,
    fallback_output_block,
    kernel_job_template,
    twin_workload,
    weight_for_kernel,
    winograd_weight_oihw,
)
from tunecli.engine.ops.x86.conv2d_nchw_rows import fallback_rows
from tunecli.engine.runtime.thread_pool import CHUNKS_PER_THREAD
from tunecli.engine.target import Target
from tunecli.engine.task.fallback_config import FallbackConfigEntity
from tunecli.engine.task.task import create
from tunecli.errors import InstantiationError

AVX2 = "llvm -mcpu=haswell -mattr=+avx2,+fma"
AVX512 = "llvm -mcpu=skylake-avx512"

#: (template, args): N, H, W, CI, CO, KH, KW, stride, padding, dilation, dtype
CASES = [
    (WINOGRAD, (1, 9, 7, 8, 16, 3, 3, 1, 1, 1, "float32")),        # 3x3 s1: tiles that do not divide
    (BLOCKED, (1, 9, 9, 8, 16, 3, 3, 2, 1, 1, "float32")),          # 3x3 s2
    (BLOCKED, (1, 6, 6, 16, 32, 1, 1, 1, 0, 1, "float32")),         # 1x1: no padding stage
    (BLOCKED, (1, 12, 12, 3, 16, 7, 7, 2, 3, 1, "float32")),        # the stem: 3 input channels
    (BLOCKED, (1, 8, 8, 8, 8, 3, 3, 1, (1, 0), 1, "float32")),      # asymmetric padding
]


def _run(name: str, args: tuple, config) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Build ``config``; run it on an NCHW input and a real weight prepared by ``weight_for_kernel``."""
    task = create(name, args, "llvm")
    with task.target:
        sch, tensors = task.instantiate(config)
    mod = build(sch, tensors, target="llvm")
    rng = np.random.default_rng(1)
    n, h, w, ci, co, kh, kw = args[:7]
    data = rng.standard_normal((n, ci, h, w)).astype("float32")
    weight = rng.standard_normal((co, ci, kh, kw)).astype("float32")
    packed = weight_for_kernel(name, weight, [int(d) for d in tensors[1].shape])
    out = np.zeros([int(d) for d in tensors[2].shape], dtype="float32")
    mod(data, packed, out)
    return data, weight, packed, out


@pytest.mark.parametrize(("name", "args"), CASES)
def test_the_kernel_takes_and_returns_nchw_and_equals_numpys_convolution(name: str, args: tuple) -> None:
    task = create(name, args, "llvm")
    configs = [FallbackConfigEntity(), task.config_space.get(len(task.config_space) - 1)]
    for config in configs:
        data, weight, packed, out = _run(name, args, config)
        assert out.shape == (1, args[4], *ref.conv2d_nchw_python(data, weight, args[7], args[8]).shape[2:])
        want = ref.conv2d_nchw_python(data, weight, args[7], args[8])
        np.testing.assert_allclose(out, want, rtol=1e-4, atol=1e-3)
        # the task's reference takes the kernel's arguments, as apply checks a random weight with it
        np.testing.assert_allclose(task.reference(data, packed), want, rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize(("name", "args"), CASES[:3])
def test_the_reference_of_any_weight_argument_is_what_the_kernel_computes(name: str, args: tuple) -> None:
    task = create(name, args, "llvm")
    with task.target:
        sch, tensors = task.instantiate(FallbackConfigEntity())
    mod = build(sch, tensors, target="llvm")
    rng = np.random.default_rng(2)
    inputs = [rng.standard_normal([int(d) for d in t.shape]).astype("float32") for t in tensors[:2]]
    out = np.zeros([int(d) for d in tensors[2].shape], dtype="float32")
    mod(*inputs, out)
    np.testing.assert_allclose(out, task.reference(*inputs), rtol=1e-4, atol=1e-3)


def test_the_data_is_packed_and_the_result_unpacked_inside_the_kernel_not_the_weight() -> None:
    """The layout transforms a network runs per call are in the kernel's time; the weight's is not."""
    for name, args in CASES[:3]:
        task = create(name, args, "llvm")
        with task.target:
            sch, tensors = task.instantiate(FallbackConfigEntity())
        assert tuple(tensors[0].shape) == (1, args[3], args[1], args[2])  # NCHW data
        assert len(tensors[1].shape) == 6  # the weight, prepared once
        assert len(tensors[2].shape) == 4 and tensors[2].shape[1] == args[4]  # NCHW result
        text = str(lower(sch, tensors))
        assert "kernel_vec" not in text and "winograd_kernel" not in text  # no weight transform per call
        assert "data_vec" not in text  # the packing is read through the padding / by the convolution


@pytest.mark.parametrize(("target", "lanes"), [(AVX2, 8), (AVX512, 16)])
def test_the_fallback_blocks_follow_the_targets_vector_width(target: str, lanes: int) -> None:
    args = (1, 56, 56, 64, 48, 3, 3, 2, 1, 1, "float32")  # 48 channels: not two AVX-512 vectors
    task = create(BLOCKED, args, target)
    with Target(target):
        _, tensors = task.instantiate(FallbackConfigEntity())
    assert tensors[1].shape[-1] == 16  # two AVX2 vectors, one AVX-512 vector
    assert tensors[1].shape[-2] == lanes  # input channels: one vector
    wino = create(WINOGRAD, (1, 14, 14, 256, 256, 3, 3, 1, 1, 1, "float32"), target)
    with Target(target):
        _, tensors = wino.instantiate(FallbackConfigEntity())
    assert tensors[1].shape[-1] % lanes == 0 and tensors[1].shape[-2] == lanes


def test_a_narrow_fallback_tile_takes_two_vectors_of_output_channels() -> None:
    with Target(AVX512):
        assert fallback_output_block(512, 16, 7, 16) == 32  # 7 columns: 14 accumulators, not 7
        assert fallback_output_block(512, 16, 28, 16) == 32  # as many accumulators, half the broadcasts
        assert fallback_output_block(48, 16, 7, 16) == 16  # 32 does not divide 48
        assert fallback_output_block(512, 8, 7, 16) == 8  # a block narrower than a vector stays
    with Target(AVX2):  # 16 registers: two vectors by blocks of 5 columns, 10 accumulators (>= 8)
        assert fallback_output_block(512, 8, 14, 8) == 16
        assert fallback_output_block(512, 8, 28, 8) == 16
        assert fallback_output_block(512, 8, 7, 8) == 16
        assert fallback_output_block(24, 8, 14, 8) == 8  # 16 does not divide 24
    args = (1, 14, 14, 256, 512, 3, 3, 2, 1, 1, "float32")
    with Target(AVX512):
        _, tensors = create(BLOCKED, args, AVX512).instantiate(FallbackConfigEntity())
    assert tensors[1].shape[-1] == 32
    nchwc = create("conv2d_NCHWc.x86", twin_workload((BLOCKED, *args))[1:], AVX512)
    with Target(AVX512):
        _, tensors = nchwc.instantiate(FallbackConfigEntity())
    assert tensors[1].shape[-1] == 32  # a network's layer: the default layouts' blocks, two vectors


@pytest.mark.parametrize(("target", "tiles"), [
    # (N, H, W, CI, CO, KH, KW, stride, padding) -> (tile_oc, tile_ow[, tile_oh]) of the fallback
    (AVX2, {(1, 224, 224, 3, 64, 7, 7, 2, 3): (16, 28), (1, 28, 28, 128, 256, 3, 3, 2, 1): (16, 14),
            (1, 56, 56, 64, 64, 1, 1, 1, 0): (16, 28, 1), (1, 28, 28, 128, 256, 1, 1, 2, 0): (16, 14, 2),
            (1, 14, 14, 256, 512, 1, 1, 2, 0): (16, 7, 1)}),  # 7 rows: one at a time
    (AVX512, {(1, 224, 224, 3, 64, 7, 7, 2, 3): (32, 7), (1, 28, 28, 128, 256, 3, 3, 2, 1): (32, 14),
              (1, 56, 56, 64, 64, 1, 1, 1, 0): (32, 28, 1)}),
])
def test_the_direct_fallback_tile_is_as_wide_on_16_registers_as_on_32(target: str, tiles: dict) -> None:
    """AVX2's fallback writes NCHW rows of as many columns as AVX-512's (the register blocks within
    the tile hold what 16 registers can), two vectors of channels wide; the window's columns are
    not unrolled (a network's 3x3 fallback unrolls them on AVX-512, in half the tile).  AVX-512's
    stem (3 input channels) takes a network's tile, a quarter of the registers' columns."""
    for args, want in tiles.items():
        task = create(BLOCKED, (*args, 1, "float32"), target)
        config = FallbackConfigEntity()
        with Target(target):
            task.instantiate(config)
        got = (config["tile_oc"].size[-1], config["tile_ow"].size[-1])
        assert got + ((config["tile_oh"].val,) if args[5] == 1 else ()) == want, args
        assert args[5] == 1 or config["unroll_kw"].val is False, args


#: ResNet-18's direct layers a kernel job runs as conv2d_nchw_blocked.x86 (N, H, W, CI, CO, KH, KW, stride,
#: padding): 3x3 stride 2 and 1x1 stride 2 at 56, 28 and 14 input rows.
RESNET18_DIRECT = [(1, 56, 56, 64, 128, 3, 3, 2, 1), (1, 56, 56, 64, 128, 1, 1, 2, 0),
                   (1, 28, 28, 128, 256, 3, 3, 2, 1), (1, 28, 28, 128, 256, 1, 1, 2, 0),
                   (1, 14, 14, 256, 512, 3, 3, 2, 1), (1, 14, 14, 256, 512, 1, 1, 2, 0)]


@pytest.mark.parametrize("target", [AVX2, AVX512])
def test_the_fallbacks_parallel_loops_split_evenly_between_two_threads(target: str) -> None:
    """Every parallel loop of these fallbacks (the convolution's channel blocks x rows, the padding's
    rows) has an even trip count of at least two threads' chunks: the pool's near-equal chunks then
    give each of 2 threads the same work (a 7-row output parallel over rows alone would split 4/3)."""
    for args in RESNET18_DIRECT:
        task = create(BLOCKED, (*args, 1, "float32"), target)
        with Target(target):
            sch, tensors = task.instantiate(FallbackConfigEntity())
            text = str(lower(sch, tensors))
        extents = [int(e) for e in re.findall(r"parallel for \([^,]+, 0, (\d+)\)", text)]
        assert extents, args
        assert all(e % 2 == 0 and e >= 2 * CHUNKS_PER_THREAD for e in extents), (args, extents)


@pytest.mark.parametrize(("target", "m"), [(AVX2, 4), (AVX512, 2)])
def test_winograd_fallback_of_a_7x7_layer_takes_f4x4_on_avx2_only(target: str, m: int) -> None:
    """Four F(4x4) tiles: with half the multiply-add rate the multiplications F(4x4) saves outweigh
    its larger transformed kernel."""
    task = create(WINOGRAD, (1, 7, 7, 512, 512, 3, 3, 1, 1, 1, "float32"), target)
    config = FallbackConfigEntity()
    with Target(target):
        task.instantiate(config)
    assert config["tile_m"].val == m


AVX2_CASES = [*CASES[:4], (GEMM_1X1, (1, 4, 16, 16, 32, 1, 1, 1, 0, 1, "float32")),
              (GEMM_1X1, (1, 8, 16, 16, 32, 1, 1, 2, 0, 1, "float32"))]


@pytest.mark.parametrize(("name", "args"), AVX2_CASES,
                         ids=["winograd", "3x3-s2", "1x1", "stem", "1x1-gemm", "1x1-gemm-s2"])
def test_avx2_code_has_no_avx512_instruction(name: str, args: tuple) -> None:
    """A haswell target's kernels use 256-bit ymm registers only, whatever machine compiles them; the
    same kernel for skylake-avx512 uses zmm (so the check can see them)."""
    sources = {}
    for target in (AVX2, AVX512):
        task = create(name, args, target)
        with Target(target):
            sch, tensors = task.instantiate(FallbackConfigEntity())
        sources[target] = build(sch, tensors, target=target).get_source("asm")
    assert "%ymm" in sources[AVX2] and "vfmadd" in sources[AVX2]
    assert "%zmm" not in sources[AVX2] and not re.search(r"%k[0-7]\b", sources[AVX2])  # no zmm, no masks
    assert "%zmm" in sources[AVX512]


def test_a_widened_fallback_equals_numpy() -> None:
    args = (1, 14, 14, 16, 64, 3, 3, 2, 1, 1, "float32")
    data, weight, packed, out = _run(BLOCKED, args, FallbackConfigEntity())
    assert packed.shape[-1] == 2 * (16 if Target("llvm").vector_bits >= 512 else 8)
    np.testing.assert_allclose(out, ref.conv2d_nchw_python(data, weight, 2, 1), rtol=1e-4, atol=1e-3)


def test_the_timing_baselines_get_the_weight_a_numpy_user_has() -> None:
    rng = np.random.default_rng(3)
    data = rng.standard_normal((1, 8, 6, 6)).astype("float32")
    weight = rng.standard_normal((16, 8, 3, 3)).astype("float32")
    packed = ref.oihw_to_kernel_nchwc(weight, 4, 8)
    np.testing.assert_array_equal(blocked_weight_oihw(data, packed)[1], weight)
    for m in (2, 4):
        transformed = ref.winograd_kernel_transform(weight, m, 4, 8)
        np.testing.assert_allclose(winograd_weight_oihw(data, transformed)[1], weight, rtol=1e-4, atol=1e-4)
    assert registry.get_strategy(BLOCKED).baseline is not None
    assert registry.get_strategy(WINOGRAD).baseline is not None


def test_which_template_a_kernel_jobs_conv2d_nchw_runs_as() -> None:
    host = Target("llvm")
    conv = (1, 56, 56, 64, 64, 3, 3, 1, 1, 1, "float32")
    assert kernel_job_template(conv, host) == WINOGRAD
    assert kernel_job_template(conv, Target(AVX2)) == WINOGRAD
    assert kernel_job_template(conv[:7] + ((1, 1),) + conv[8:], host) == WINOGRAD
    assert kernel_job_template(conv[:7] + (2,) + conv[8:], host) == BLOCKED  # stride 2
    assert kernel_job_template(conv[:5] + (1, 1) + conv[7:], Target(AVX2)) == BLOCKED  # 1x1, padded
    one = conv[:5] + (1, 1, 1, 0) + conv[9:]
    assert kernel_job_template(one, Target(AVX512)) == GEMM_1X1  # 1x1 stride 1: a GEMM over pixels
    assert kernel_job_template(one, Target(AVX2)) == BLOCKED  # as fast blocked with 8-lane vectors
    assert kernel_job_template(one[:7] + (2,) + one[8:], Target(AVX512)) == GEMM_1X1  # 28x28 out: 56 lanes
    assert kernel_job_template(one[:7] + (2,) + one[8:], Target(AVX2)) == BLOCKED
    assert kernel_job_template((1, 28, 28, 128, 256, 1, 1, 2, 0, 1, "float32"), Target(AVX512)) == BLOCKED
    assert kernel_job_template((1, 14, 14, 256, 512, 1, 1, 2, 0, 1, "float32"), Target(AVX512)) == BLOCKED
    assert kernel_job_template(one[:8] + (1,) + one[9:], Target(AVX512)) == BLOCKED  # padded
    assert kernel_job_template(conv[:9] + (2, "float32"), host) is None  # dilation: conv2d_nchw.x86
    assert kernel_job_template(conv[:10] + ("int8",), host) is None
    arm = Target("llvm -device=arm_cpu -mtriple=aarch64-linux-gnu -mattr=+neon")
    assert kernel_job_template(conv, arm) is None


@pytest.mark.parametrize("args", [(1, 7, 13, 16, 32, 1, 1, 1, 0, 1, "float32"),
                                  (1, 56, 56, 64, 64, 1, 1, 1, 0, 1, "float32")])
def test_the_1x1_gemm_over_pixels_equals_numpy(args: tuple) -> None:
    task = create(GEMM_1X1, args, "llvm")
    for config in (FallbackConfigEntity(), task.config_space.get(len(task.config_space) - 1)):
        data, weight, packed, out = _run(GEMM_1X1, args, config)
        want = ref.conv2d_nchw_python(data, weight, 1, 0)
        np.testing.assert_allclose(out, want, rtol=1e-4, atol=1e-3)
        np.testing.assert_allclose(task.reference(data, packed), want, rtol=1e-5, atol=1e-4)
    with task.target:
        sch, tensors = task.instantiate(FallbackConfigEntity())
    assert "data_vec" not in str(lower(sch, tensors))  # NCHW data read in place, the result written so


@pytest.mark.parametrize(("target", "tile"), [(AVX512, (4, 56)), (AVX2, (2, 28))])
def test_the_1x1_fallback_tile_fits_the_registers(target: str, tile: tuple[int, int]) -> None:
    """Rows of channels by a row of columns within four vectors; the accumulators and one row of
    data within the registers (56 columns: 4 AVX-512 instructions, 16 + 4 registers of 32)."""
    config = FallbackConfigEntity()
    with Target(target):
        create(GEMM_1X1, (1, 56, 56, 64, 64, 1, 1, 1, 0, 1, "float32"), target).instantiate(config)
    assert (config["tile_co"].size[-1], config["tile_ow"].size[-1]) == tile
    assert fallback_rows(64, 4, 31) == 4 and fallback_rows(512, 1, 31) == 16
    assert fallback_rows(12, 3, 14) == 3 and fallback_rows(48, 1, 31) == 16  # at most MAX_ROWS


def test_the_1x1_gemm_rejects_other_convolutions() -> None:
    for args in [(1, 8, 8, 8, 8, 3, 3, 1, 1, 1, "float32"), (1, 8, 8, 8, 8, 1, 1, 1, 0, 2, "float32"),
                 (1, 8, 8, 8, 8, 1, 1, 1, 1, 1, "float32")]:
        with pytest.raises(InstantiationError, match="only 1x1 kernels with no padding and dilation 1"):
            create(GEMM_1X1, args, "llvm")


@pytest.mark.parametrize("args", [(1, 9, 13, 16, 32, 1, 1, 2, 0, 1, "float32"),     # odd sizes: 5x7 out
                                  (1, 10, 7, 8, 12, 1, 1, (3, 2), 0, 1, "float32"),  # unequal strides
                                  (1, 14, 14, 16, 48, 1, 1, 2, 0, 1, "float32")])    # 7x7: whole rows
def test_the_1x1_gemm_with_a_stride_equals_numpy(args: tuple) -> None:
    """Strided pixels are copied into a matrix, then the GEMM; every tile shape (one row's columns,
    several rows' columns, whole rows as one run) computes the convolution."""
    task = create(GEMM_1X1, args, "llvm")
    space = task.config_space
    configs = [FallbackConfigEntity(), *(space.get(i) for i in range(0, len(space), max(len(space) // 5, 1)))]
    shapes = set()
    for config in configs:
        data, weight, packed, out = _run(GEMM_1X1, args, config)
        want = ref.conv2d_nchw_python(data, weight, args[7], 0)
        np.testing.assert_allclose(out, want, rtol=1e-4, atol=1e-3)
        np.testing.assert_allclose(task.reference(data, packed), want, rtol=1e-5, atol=1e-4)
        lines, columns = config["tile_oh"].size[-1], config["tile_ow"].size[-1]
        shapes.add("whole rows" if columns == out.shape[3] and lines > 1 else "rows" if lines > 1 else "row")
    assert len(shapes) >= 2
    with task.target:
        sch, tensors = task.instantiate(FallbackConfigEntity())
    assert "data_strided" in str(lower(sch, tensors))


@pytest.mark.parametrize(("args", "loops"), [((1, 56, 56, 16, 32, 1, 1, 2, 0, 1, "float32"), 1),  # 14 x 2
                                             ((2, 14, 14, 16, 32, 1, 1, 2, 0, 1, "float32"), 2)])  # 2 x 7
def test_the_strided_pixels_are_copied_inside_the_parallel_loop_where_it_has_enough_row_blocks(
        args: tuple, loops: int) -> None:
    """With at least ROW_BLOCKS row blocks, each iteration of the one parallel loop copies its own
    rows' pixels (no loop of its own to wait for, the copy read from L1); with fewer, the copy is a
    parallel loop of its own, so that the GEMM keeps its channel blocks in its parallel loop."""
    task = create(GEMM_1X1, args, "llvm")
    with task.target:
        sch, tensors = task.instantiate(FallbackConfigEntity())
    text = str(lower(sch, tensors))
    assert text.count("parallel for") == loops
    assert (text.index("parallel for") < text.index("allocate data_strided")) == (loops == 1)
    data, weight, _, out = _run(GEMM_1X1, args, FallbackConfigEntity())
    np.testing.assert_allclose(out, ref.conv2d_nchw_python(data, weight, 2, 0), rtol=1e-4, atol=1e-3)


@pytest.mark.parametrize("target", [AVX2, AVX512])
def test_the_strided_1x1_gemm_of_either_vector_width_equals_numpy_where_it_runs(target: str) -> None:
    if not Target(target).is_host:
        pytest.skip(f"{target} code does not run on this machine")
    args = (1, 14, 14, 16, 48, 1, 1, 2, 0, 1, "float32")
    task = create(GEMM_1X1, args, target)
    with Target(target):
        sch, tensors = task.instantiate(FallbackConfigEntity())
    mod = build(sch, tensors, target=target)
    rng = np.random.default_rng(5)
    data = rng.standard_normal((1, 16, 14, 14)).astype("float32")
    weight = rng.standard_normal((48, 16, 1, 1)).astype("float32")
    out = np.zeros((1, 48, 7, 7), dtype="float32")
    mod(data, weight_for_kernel(GEMM_1X1, weight, [int(d) for d in tensors[1].shape]), out)
    np.testing.assert_allclose(out, ref.conv2d_nchw_python(data, weight, 2, 0), rtol=1e-4, atol=1e-3)


def test_the_1x1_fallback_takes_whole_rows_where_they_fill_the_vectors_better() -> None:
    """A 7x7 output is one 49-pixel run (4 instructions on 16 lanes), not 7 runs of 7 (3 each); a
    28-wide output two rows (56 pixels in 4 instructions); a 56-wide one a row."""
    assert fallback_pixels(7, 7, 16) == (7, 7) and fallback_pixels(28, 28, 16) == (2, 28)
    assert fallback_pixels(56, 56, 16) == (1, 56) and fallback_pixels(56, 56, 8) == (1, 28)
    assert fills_vectors(28, 28, 16) and fills_vectors(56, 56, 16)
    assert not fills_vectors(14, 14, 16) and not fills_vectors(7, 7, 16)  # 28 and 49 lanes of 48 and 64
    config = FallbackConfigEntity()
    task = create(GEMM_1X1, (1, 14, 14, 16, 64, 1, 1, 2, 0, 1, "float32"), AVX512)
    with Target(AVX512):
        sch, tensors = task.instantiate(config)
    assert (config["tile_oh"].size[-1], config["tile_ow"].size[-1]) == (7, 7)
    assert "vectorized for (y.c.x.c.fused, 0, 49)" in str(lower(sch, tensors))


def test_winograd_rejects_what_it_cannot_compute() -> None:
    with pytest.raises(InstantiationError, match="only 3x3 kernels with stride 1"):
        create(WINOGRAD, (1, 8, 8, 8, 8, 3, 3, 2, 1, 1, "float32"), "llvm")
    with pytest.raises(InstantiationError, match="is not"):
        weight_for_kernel("conv2d_nchw.x86", np.zeros((8, 8, 3, 3), "float32"), (8, 8, 3, 3))

def assert_fallback_equals_numpy(name: str, args: tuple, target: str, seed: int) -> None:
    """``name``'s fallback kernel of a 3x3 ``args`` for ``target``, run on random data, equals numpy."""
    task = create(name, args, target)
    with Target(target):
        sch, tensors = task.instantiate(FallbackConfigEntity())
    mod = build(sch, tensors, target=target)
    rng = np.random.default_rng(seed)
    data = rng.standard_normal((1, args[3], args[1], args[2])).astype("float32")
    weight = rng.standard_normal((args[4], args[3], 3, 3)).astype("float32")
    out = np.zeros([int(d) for d in tensors[2].shape], dtype="float32")
    mod(data, weight_for_kernel(name, weight, [int(d) for d in tensors[1].shape]), out)
    want = ref.conv2d_nchw_python(data, weight, args[7], args[8])
    np.testing.assert_allclose(out, want, rtol=1e-4, atol=1e-3)


@pytest.mark.parametrize("target", [AVX2, AVX512])
@pytest.mark.parametrize(("name", "args"), [CASES[0], CASES[1]])
def test_either_vector_widths_kernels_equal_numpy_where_they_run(target: str, name: str, args: tuple) -> None:
    if not Target(target).is_host:
        pytest.skip(f"{target} code does not run on this machine")
    assert_fallback_equals_numpy(name, args, target, seed=4)


@st.composite
def blocked_case(draw: st.DrawFn) -> tuple[tuple, int | None]:
    """A small direct convolution and a legal config index of its space (None: the fallback)."""
    k = draw(st.sampled_from([1, 3]))
    stride = draw(st.integers(1, 2))
    size = draw(st.integers(5, 9))
    ci, co = draw(st.sampled_from([3, 8, 16])), draw(st.sampled_from([16, 32, 64]))
    args = (1, size, size, ci, co, k, k, stride, k // 2, 1, "float32")
    space = create(BLOCKED, args, "llvm").config_space
    valid = [i for i in range(space.range_length) if space.is_index_valid(i)]
    return args, draw(st.one_of(st.none(), st.sampled_from(valid)))


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(blocked_case())
def test_legal_configs_and_fallbacks_equal_numpy(case: tuple[tuple, int | None]) -> None:
    args, index = case
    task = create(BLOCKED, args, "llvm")
    config = FallbackConfigEntity() if index is None else task.config_space.get(index)
    data, weight, _, out = _run(BLOCKED, args, config)
    want = ref.conv2d_nchw_python(data, weight, args[7], args[8])
    np.testing.assert_allclose(out, want, rtol=1e-4, atol=1e-3)


def _lowered(args: tuple, target: str, config=None) -> str:
    task = create(BLOCKED, args, target)
    with Target(target):
        sch, tensors = task.instantiate(FallbackConfigEntity() if config is None else config)
        return str(lower(sch, tensors))


def test_a_strided_window_reads_the_nchw_data_with_bound_checks_on_32_registers() -> None:
    """No padded, packed copy of the data per call for a strided 3x3 fallback with 32 vector registers;
    with 16 registers, unit stride or unrolled window columns the copy stays."""
    strided = (1, 56, 56, 64, 128, 3, 3, 2, 1, 1, "float32")
    assert "data_pad" not in _lowered(strided, AVX512)
    assert "data_pad" in _lowered(strided, AVX2)
    assert "data_pad" in _lowered((1, 56, 56, 64, 64, 3, 3, 1, 1, 1, "float32"), AVX512)
    space = create(BLOCKED, strided, AVX512).config_space
    unrolled = next(space.get(i) for i in range(len(space)) if space.get(i)["unroll_kw"].val)
    assert "data_pad" in _lowered(strided, AVX512, unrolled)


@pytest.mark.parametrize("args", [(1, 13, 11, 16, 32, 3, 3, 2, 1, 1, "float32"),
                                  (1, 12, 12, 16, 32, 3, 3, 2, (1, 1, 0, 2), 1, "float32")])
def test_a_strided_window_read_with_bound_checks_equals_numpy(args: tuple) -> None:
    if not Target(AVX512).is_host:
        pytest.skip(f"{AVX512} code does not run on this machine")
    assert "data_pad" not in _lowered(args, AVX512)
    assert_fallback_equals_numpy(BLOCKED, args, AVX512, seed=5)


def _writes_channels_as_vectors(text: str) -> bool:
    """Whether the NCHW result is written a vector of channels at a time (a lane at a time in the code)."""
    return re.search(r"vectorized for \(c\.inner, 0, \d+\) \{\s*conv2d_nchw\[", text) is not None


@pytest.mark.parametrize("args", [(1, 28, 28, 128, 256, 1, 1, 2, 0, 1, "float32"),
                                  (1, 56, 56, 64, 128, 3, 3, 2, 1, 1, "float32")])
def test_the_register_block_is_written_a_channel_at_a_time_on_32_registers(args: tuple) -> None:
    """On 32-register targets the NCHW result is written channel by channel (each channel's
    positions of the block, a loop over the block's channels), not as vectors of channels
    scattered a lane at a time; 16-register targets keep the vectors."""
    assert not _writes_channels_as_vectors(_lowered(args, AVX512))
    assert re.search(r"for \(c\.inner, 0, 32\) \{\s*unrolled for", _lowered(args, AVX512))
    assert _writes_channels_as_vectors(_lowered(args, AVX2))
