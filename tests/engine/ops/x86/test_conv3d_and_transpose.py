"""conv3d_ncdhw.x86 and conv2d_transpose_nchw.x86: numpy references against PyTorch, TVM's
workloads and fallback configs, and kernels that match the references."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from tunecli.engine.build import build
from tunecli.engine.ops.nn.conv2d_transpose import conv2d_transpose_nchw_python, transpose_output_shape
from tunecli.engine.ops.nn.conv3d import conv3d_ncdhw_python, pad_tuple3d
from tunecli.engine.ops.x86.conv3d import CONV3D_NCDHW
from tunecli.engine.target import Target
from tunecli.engine.task import task as autotvm_task
from tunecli.engine.task.fallback_config import FallbackConfigEntity
from tunecli.errors import ExprError


def tensor(shape: tuple[int, ...]) -> tuple:
    return ("TENSOR", shape, "float32")


def run(task, index: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """The kernel of ``task``'s config ``index`` on random inputs, and the reference."""
    sch, bufs = task.instantiate(task.config_space.get(index))
    mod = build(sch, bufs, target="llvm")
    inputs = [rng.standard_normal(t.shape).astype("float32") for t in bufs[:-1]]
    out = np.zeros(bufs[-1].shape, dtype="float32")
    mod(*inputs, out)
    return out, task.reference(*inputs)


def test_conv3d_reference_is_pytorchs() -> None:
    rng = np.random.default_rng(1)
    x, w = rng.standard_normal((2, 3, 5, 6, 7)), rng.standard_normal((4, 3, 3, 2, 3))
    got = conv3d_ncdhw_python(x, w, (1, 2, 1), (1, 0, 1), (2, 1, 1))
    want = torch.nn.functional.conv3d(
        torch.tensor(x), torch.tensor(w), stride=(1, 2, 1), padding=(1, 0, 1), dilation=(2, 1, 1)
    ).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-10)
    assert pad_tuple3d(1) == (1,) * 6 and pad_tuple3d((1, 2, 3)) == (1, 2, 3, 1, 2, 3)
    with pytest.raises(ExprError, match="padding"):
        pad_tuple3d((1, 2))


@pytest.mark.parametrize(
    "stride, padding, output_padding",
    [((2, 2), (1, 1), (0, 0)), ((3, 2), (0, 1), (2, 1)), ((1, 1), (0, 0), (0, 0))],
)
def test_transposed_convolution_reference_is_pytorchs(stride, padding, output_padding) -> None:
    rng = np.random.default_rng(2)
    x, w = rng.standard_normal((1, 3, 4, 5)), rng.standard_normal((3, 2, 4, 3))
    got = conv2d_transpose_nchw_python(x, w, stride, padding, None, output_padding)
    want = torch.nn.functional.conv_transpose2d(
        torch.tensor(x), torch.tensor(w), stride=stride, padding=padding, output_padding=output_padding
    ).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-10)
    assert got.shape[2:] == transpose_output_shape((4, 5), (4, 3), stride, padding, output_padding)


def test_an_output_padding_not_below_the_stride_is_refused() -> None:
    with pytest.raises(ExprError, match="output_padding"):
        transpose_output_shape((4, 4), (3, 3), (2, 2), (1, 1), (2, 0))


def test_conv3d_task_keeps_tvms_knobs_and_fallback() -> None:
    args = (
        tensor((1, 16, 4, 14, 14)),
        tensor((32, 16, 3, 3, 3)),
        (1, 1, 1),
        (1, 1, 1, 1, 1, 1),
        (1, 1, 1),
        "float32",
    )
    task = autotvm_task.create("conv3d_ncdhw.x86", args, target="llvm -mcpu=haswell")
    assert list(task.config_space.space_map) == ["tile_ic", "tile_oc", "tile_ow", "unroll_kw"]
    assert all(e.size[-1] <= 8 for e in task.config_space.space_map["tile_ow"].entities)
    with Target("llvm -mcpu=haswell"):  # AVX2: blocks of 8 float lanes; rows of 7 columns
        cfg = FallbackConfigEntity()
        CONV3D_NCDHW.compute(cfg, *CONV3D_NCDHW.declare(*args).inputs, **CONV3D_NCDHW.declare(*args).attrs)
    assert [cfg[k].size for k in ("tile_ic", "tile_oc", "tile_ow")] == [[2, 8], [4, 8], [2, 7]]
    assert cfg["unroll_kw"].val is False
    assert task.flop == 2 * 32 * 4 * 14 * 14 * 16 * 27


@pytest.mark.parametrize(
    "name, args",
    [
        (
            "conv3d_ncdhw.x86",
            (tensor((1, 3, 2, 6, 5)), tensor((4, 3, 1, 1, 1)), (1, 1, 1), (0,) * 6, (1, 1, 1), "float32"),
        ),
        (
            "conv2d_transpose_nchw.x86",
            (tensor((1, 5, 3, 3)), tensor((5, 3, 3, 3)), (1, 1), (0, 0, 0, 0), "float32", (0, 0)),
        ),
    ],
)
def test_unpadded_kernels_match_the_reference(name: str, args: tuple) -> None:
    rng = np.random.default_rng(3)
    task = autotvm_task.create(name, args, target="llvm")
    for index in (0, len(task.config_space) - 1):
        got, want = run(task, index, rng)
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
