"""conv2d_nchw_pixels.x86: a direct NCHW convolution vectorized over output pixels, the data's column
phases split first, the weight prepared once as ``[CO/mr, CI, KH, KW, mr]``."""

from __future__ import annotations

import re

import numpy as np
import pytest

from tunecli.engine.build import build, lower
from tunecli.engine.ops import reference as ref
from tunecli.engine.ops.x86.conv2d_nchw_blocked import BLOCKED, kernel_job_template, weight_for_kernel
from tunecli.engine.ops.x86.conv2d_nchw_pixels import PIXELS
from tunecli.engine.ops.x86.conv2d_nchw_rows import pack_rows_weight, unpack_rows_weight
from tunecli.engine.target import Target
from tunecli.engine.task.fallback_config import FallbackConfigEntity
from tunecli.engine.task.task import create
from tunecli.errors import InstantiationError

AVX2 = "llvm -mcpu=haswell -mattr=+avx2,+fma"
AVX512 = "llvm -mcpu=skylake-avx512"
#: N, H, W, CI, CO, KH, KW, stride, padding, dilation, dtype
STEM = (1, 224, 224, 3, 64, 7, 7, 2, 3, 1, "float32")


def _run(args: tuple, config, target: str = "llvm") -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Build ``config`` for ``target``; run it on NCHW data and a weight packed by ``weight_for_kernel``."""
    task = create(PIXELS, args, target)
    with Target(target):
        sch, tensors = task.instantiate(config)
    mod = build(sch, tensors, target=target)
    rng = np.random.default_rng(2)
    n, h, w, ci, co, kh, kw = args[:7]
    data = rng.standard_normal((n, ci, h, w)).astype("float32")
    weight = rng.standard_normal((co, ci, kh, kw)).astype("float32")
    out = np.zeros([int(d) for d in tensors[2].shape], dtype="float32")
    mod(data, weight_for_kernel(PIXELS, weight, [int(d) for d in tensors[1].shape]), out)
    return data, weight, out


@pytest.mark.parametrize("args", [
    (1, 9, 11, 3, 8, 5, 5, 2, 2, 1, "float32"),          # odd sizes, stride 2
    (1, 10, 9, 4, 8, 3, 3, 1, (1, 0), 1, "float32"),      # stride 1, asymmetric padding
    (1, 13, 12, 3, 16, 7, 7, (2, 3), 3, 1, "float32"),    # unequal strides: three column phases
    (1, 32, 32, 3, 16, 7, 7, 2, 3, 1, "float32"),         # a small stem: two lines of 16 columns
])
def test_the_kernel_equals_numpys_convolution_for_any_tile(args: tuple) -> None:
    space = create(PIXELS, args, "llvm").config_space
    configs = [FallbackConfigEntity(), *(space.get(i) for i in range(0, len(space), max(len(space) // 4, 1)))]
    for config in configs:
        data, weight, out = _run(args, config)
        np.testing.assert_allclose(out, ref.conv2d_nchw_python(data, weight, args[7], args[8]),
                                   rtol=1e-4, atol=1e-3)


def test_the_reference_reads_the_packed_weight() -> None:
    args = (1, 9, 11, 3, 8, 5, 5, 2, 2, 1, "float32")
    rng = np.random.default_rng(3)
    data = rng.standard_normal((1, 3, 9, 11)).astype("float32")
    weight = rng.standard_normal((8, 3, 5, 5)).astype("float32")
    packed = pack_rows_weight(weight, 4)
    assert packed.shape == (2, 3, 5, 5, 4)
    np.testing.assert_array_equal(unpack_rows_weight(packed), weight)
    np.testing.assert_allclose(create(PIXELS, args, "llvm").reference(data, packed),
                               ref.conv2d_nchw_python(data, weight, 2, 2), rtol=1e-5, atol=1e-4)


def test_the_stems_fallback_tile_and_its_vector_stores() -> None:
    """The 7x7 stem on 16 lanes: 8 channels by 2 rows of 16 columns (16 accumulators); the result is
    written a vector of one channel's row at a time, no channel-blocked stage to unpack."""
    config = FallbackConfigEntity()
    task = create(PIXELS, STEM, AVX512)
    with Target(AVX512):
        sch, tensors = task.instantiate(config)
    tile = tuple(config[k].size[-1] for k in ("tile_co", "tile_oh", "tile_ow"))
    assert tile == (8, 2, 16) and config["unroll_kw"].val
    text = str(lower(sch, tensors))
    assert "data_phases" in text and "unpack" not in text
    assert [int(d) for d in tensors[1].shape] == [8, 3, 7, 7, 8]


def test_a_kernel_job_runs_a_wide_window_over_few_channels_as_this_on_512_bit_targets() -> None:
    assert kernel_job_template(STEM, Target(AVX512)) == PIXELS
    assert kernel_job_template(STEM, Target(AVX2)) == BLOCKED
    mobilenet_stem = (1, 224, 224, 3, 32, 3, 3, 2, 1, 1, "float32")  # a 3-column window
    assert kernel_job_template(mobilenet_stem, Target(AVX512)) == BLOCKED
    assert kernel_job_template(STEM[:3] + (16,) + STEM[4:], Target(AVX512)) == BLOCKED  # a vector of channels
    narrow = (1, 30, 30, 3, 64, 7, 7, 2, 3, 1, "float32")  # rows of 15 columns: no whole vectors
    assert kernel_job_template(narrow, Target(AVX512)) == BLOCKED


@pytest.mark.parametrize("target", [AVX2, AVX512])
def test_either_vector_widths_kernel_equals_numpy_where_it_runs(target: str) -> None:
    if not Target(target).is_host:
        pytest.skip(f"{target} code does not run on this machine")
    args = (1, 32, 32, 3, 16, 7, 7, 2, 3, 1, "float32")
    data, weight, out = _run(args, FallbackConfigEntity(), target)
    np.testing.assert_allclose(out, ref.conv2d_nchw_python(data, weight, 2, 3), rtol=1e-4, atol=1e-3)


def test_avx2_code_has_no_avx512_instruction() -> None:
    sources = {}
    for target in (AVX2, AVX512):
        task = create(PIXELS, (1, 32, 32, 3, 16, 7, 7, 2, 3, 1, "float32"), target)
        with Target(target):
            sch, tensors = task.instantiate(FallbackConfigEntity())
        sources[target] = build(sch, tensors, target=target).get_source("asm")
    assert "%ymm" in sources[AVX2] and "vfmadd" in sources[AVX2]
    assert "%zmm" not in sources[AVX2] and not re.search(r"%k[0-7]\b", sources[AVX2])
    assert "%zmm" in sources[AVX512]


def test_dilation_is_refused() -> None:
    with pytest.raises(InstantiationError, match="without dilation"):
        create(PIXELS, (1, 12, 12, 3, 8, 3, 3, 1, 1, 2, "float32"), "llvm")
