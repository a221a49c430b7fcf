"""The templates of TVM's autotvm tutorials, scheduled for a CPU (and the conv2d one for a GPU).

``tutorial/matmul`` (``tune_simple_template.py``): arguments ``N, L, M, dtype``; kernel
arguments ``A [N, L]``, ``B [L, M]``, ``C [N, M]``; knobs ``tile_y``, ``tile_x`` (2-way splits of
the output axes), schedule ``yo, xo, k, yi, xi``.

``tutorial/conv2d_no_batching`` (``tune_conv2d_cuda.py``): arguments ``N, H, W, CO, CI, KH, KW,
stride, padding`` (N must be 1); kernel arguments ``data [N, CI, H, W]``, ``kernel [CO, CI, KH,
KW]``, output ``[N, CO, OH, OW]``.  Its space is the tutorial's exactly (``tile_f/y/x`` 4-way,
``tile_rc/ry/rx`` 3-way, ``auto_unroll_max_step`` [0, 512, 1500], ``unroll_explicit`` [0, 1]).
On a CPU the GPU bindings become loops: the block axes are fused and run in parallel, the
thread tile is accumulated in a ``cache_write(.., "local")`` stage, and the two unroll knobs map
to explicit unrolling: ``auto_unroll_max_step = S`` unrolls the accumulator stage's innermost
loops (innermost first) while the product of their extents stays <= S; ``unroll_explicit = 1``
applies the same rule to the inner loops of the output-copy stage.

For a GPU target (the current target has the key ``gpu``) the conv2d template takes the
tutorial's own GPU schedule instead (``ops.cuda.conv2d_tutorial``): thread bindings, ``shared``
and ``local`` stages.

Both are strategies (``MATMUL``, ``CONV2D_NO_BATCHING``) whose knobs are defined by the schedule,
as in the tutorials; with an epilogue the epilogue stage takes the output stage's place.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from tunecli.engine import te
from tunecli.engine.ops import baseline
from tunecli.engine.ops import reference as ref
from tunecli.engine.ops.cuda.conv2d_tutorial import schedule_conv2d_no_batching_cuda
from tunecli.engine.ops.epilogue import create_group_schedule, inline_between, output_and_accumulator
from tunecli.engine.ops.nn.conv2d import conv2d_nchw
from tunecli.engine.ops.strategy import OpCall, Strategy
from tunecli.engine.schedule import Schedule, Stage
from tunecli.engine.target import Target
from tunecli.engine.task.space import ConfigSpace
from tunecli.engine.te.window import IntPair, Padding
from tunecli.errors import InstantiationError


def declare_matmul(N: int, L: int, M: int, dtype: str = "float32") -> OpCall:
    """``A [N, L]`` and ``B [L, M]`` placeholders."""
    return OpCall((te.placeholder((N, L), name="A", dtype=dtype),
                   te.placeholder((L, M), name="B", dtype=dtype)))


def matmul_compute(cfg: ConfigSpace, A: te.Tensor, B: te.Tensor) -> te.Tensor:
    """``C = A @ B`` (the tutorial's knobs are defined by its schedule)."""
    k = te.reduce_axis((0, A.shape[1]), name="k")
    return te.compute((A.shape[0], B.shape[1]), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")


def schedule_matmul(cfg: ConfigSpace, outs: Sequence[te.Tensor],
                    epilogue: te.Tensor | None = None) -> Schedule:
    """Split the output axes by ``tile_y`` / ``tile_x``; loops ``yo, xo, k, yi, xi``."""
    (C,) = outs
    s = create_group_schedule(outs, epilogue)
    out = C if epilogue is None else epilogue
    if epilogue is not None:
        inline_between(s, outs, epilogue)
    y, x = s[out].op.axis
    k = s[C].op.reduce_axis[0]
    cfg.define_split("tile_y", y, num_outputs=2)
    cfg.define_split("tile_x", x, num_outputs=2)
    yo, yi = cfg["tile_y"].apply(s, out, y)
    xo, xi = cfg["tile_x"].apply(s, out, x)
    if epilogue is None:
        s[C].reorder(yo, xo, k, yi, xi)
    else:
        s[out].reorder(yo, xo, yi, xi)
        s[C].compute_at(s[out], xo)
        s[C].reorder(k, *s[C].op.axis)
    return s


def _matmul_wrapping(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a @ b`` summed in the inputs' dtype as the kernel does (integer sums wrap around)."""
    wide = np.float64 if a.dtype.kind == "f" else np.int64
    return (a.astype(wide) @ b.astype(wide)).astype(a.dtype)


MATMUL = Strategy(
    op="matmul", target_key="cpu", name="tutorial/matmul", declare=declare_matmul, compute=matmul_compute,
    schedule=schedule_matmul, reference=_matmul_wrapping, outputs=("C",),
    summary="TVM's `tune_simple_template` tutorial", plevel=0, baseline=baseline.MATMUL)


def declare_conv2d_no_batching(N: int, H: int, W: int, CO: int, CI: int, KH: int, KW: int, stride: IntPair,
                               padding: Padding) -> OpCall:
    """``data [N, CI, H, W]`` and ``kernel [CO, CI, KH, KW]`` float32 placeholders (N must be 1)."""
    if N != 1:
        raise InstantiationError(f"tutorial/conv2d_no_batching: only batch size 1 is supported, got {N}")
    data = te.placeholder((N, CI, H, W), name="data")
    kernel = te.placeholder((CO, CI, KH, KW), name="kernel")
    return OpCall((data, kernel), {"stride": stride, "padding": padding})


def conv2d_no_batching_compute(cfg: ConfigSpace, data: te.Tensor, kernel: te.Tensor, stride: IntPair,
                               padding: Padding) -> te.Tensor:
    """``nn.conv2d_nchw`` in float32 (the knobs are defined by the schedule)."""
    conv = conv2d_nchw(data, kernel, stride, padding, dilation=1, out_dtype="float32")
    n, ci, co, (kh, kw) = data.shape[0], data.shape[1], kernel.shape[0], kernel.shape[2:]
    cfg.add_flop(2 * n * co * _out_size(conv) * ci * kh * kw)
    return conv


def schedule_conv2d_no_batching(cfg: ConfigSpace, outs: Sequence[te.Tensor],
                                epilogue: te.Tensor | None = None) -> Schedule:
    """The conv2d tutorial's schedule (see the module docstring)."""
    (conv,) = outs
    s = create_group_schedule(outs, epilogue)
    n, f, y, x = s[conv].op.axis
    rc, ry, rx = s[conv].op.reduce_axis
    cfg.define_split("tile_f", f, num_outputs=4)
    cfg.define_split("tile_y", y, num_outputs=4)
    cfg.define_split("tile_x", x, num_outputs=4)
    cfg.define_split("tile_rc", rc, num_outputs=3)
    cfg.define_split("tile_ry", ry, num_outputs=3)
    cfg.define_split("tile_rx", rx, num_outputs=3)
    cfg.define_knob("auto_unroll_max_step", [0, 512, 1500])
    cfg.define_knob("unroll_explicit", [0, 1])
    target = Target.current()
    if target is not None and target.is_gpu:
        return schedule_conv2d_no_batching_cuda(cfg, outs, epilogue)

    pad_data = s[conv].op.input_tensors[0]
    s[pad_data].compute_inline()

    output, OL = output_and_accumulator(s, conv, epilogue)
    n, f, y, x = s[output].op.axis
    bf, vf, tf, fi = cfg["tile_f"].apply(s, output, f)
    by, vy, ty, yi = cfg["tile_y"].apply(s, output, y)
    bx, vx, tx, xi = cfg["tile_x"].apply(s, output, x)
    s[output].reorder(n, bf, by, bx, vf, vy, vx, tf, ty, tx, fi, yi, xi)
    blocks = s[output].fuse(n, bf, by, bx)
    s[output].parallel(blocks)
    s[OL].compute_at(s[output], tx)

    n, f, y, x = s[OL].op.axis
    rc, ry, rx = s[OL].op.reduce_axis
    rco, rcm, rci = cfg["tile_rc"].apply(s, OL, rc)
    ryo, rym, ryi = cfg["tile_ry"].apply(s, OL, ry)
    rxo, rxm, rxi = cfg["tile_rx"].apply(s, OL, rx)
    s[OL].reorder(rco, ryo, rxo, rcm, rym, rxm, rci, ryi, rxi, n, f, y, x)

    step = cfg["auto_unroll_max_step"].val
    tiles = ("tile_f", "tile_y", "tile_x", "tile_rc", "tile_ry", "tile_rx")
    sizes = {name: cfg[name].size[-1] for name in tiles}
    inner_ol = [(x, sizes["tile_x"]), (y, sizes["tile_y"]), (f, sizes["tile_f"]), (rxi, sizes["tile_rx"]),
                (ryi, sizes["tile_ry"]), (rci, sizes["tile_rc"])]
    _unroll_innermost(s[OL], inner_ol, step)
    if cfg["unroll_explicit"].val:
        inner_out = [(xi, sizes["tile_x"]), (yi, sizes["tile_y"]), (fi, sizes["tile_f"])]
        _unroll_innermost(s[output], inner_out, step)
    return s


CONV2D_NO_BATCHING = Strategy(
    op="conv2d_nchw", target_key="cpu", name="tutorial/conv2d_no_batching",
    declare=declare_conv2d_no_batching, compute=conv2d_no_batching_compute,
    schedule=schedule_conv2d_no_batching, reference=ref.conv2d_nchw_python, outputs=("conv",),
    summary="TVM's conv2d tutorial", plevel=0, baseline=baseline.CONV2D_NCHW)


def _unroll_innermost(stage: Stage, loops: list[tuple[te.IterVar, int]], max_step: int) -> None:
    """Unroll ``loops`` (innermost first) while the product of their extents is <= ``max_step``."""
    total = 1
    for axis, extent in loops:
        total *= extent
        if total > max_step:
            return
        if extent > 1:
            stage.unroll(axis)


def _out_size(conv: te.Tensor) -> int:
    """Output pixels per channel of an NCHW convolution."""
    return math.prod(conv.shape[2:])
