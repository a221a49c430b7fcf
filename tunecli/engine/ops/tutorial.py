"""The templates of TVM's autotvm tutorials, scheduled for a CPU.

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
"""

from __future__ import annotations

import math
from typing import Any

from tunecli.engine import te
from tunecli.engine.ops.nn.conv2d import conv2d_nchw
from tunecli.engine.schedule import create_schedule
from tunecli.engine.task.task import get_config, template
from tunecli.errors import InstantiationError


@template("tutorial/matmul")
def matmul(N: int, L: int, M: int, dtype: str) -> tuple[Any, list]:
    """``C = A @ B`` with the output axes split by ``tile_y`` / ``tile_x``."""
    A = te.placeholder((N, L), name="A", dtype=dtype)
    B = te.placeholder((L, M), name="B", dtype=dtype)
    k = te.reduce_axis((0, L), name="k")
    C = te.compute((N, M), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    s = create_schedule(C.op)
    y, x = s[C].op.axis
    k = s[C].op.reduce_axis[0]
    cfg = get_config()
    cfg.define_split("tile_y", y, num_outputs=2)
    cfg.define_split("tile_x", x, num_outputs=2)
    yo, yi = cfg["tile_y"].apply(s, C, y)
    xo, xi = cfg["tile_x"].apply(s, C, x)
    s[C].reorder(yo, xo, k, yi, xi)
    return s, [A, B, C]


@template("tutorial/conv2d_no_batching")
def conv2d_no_batching(N: int, H: int, W: int, CO: int, CI: int, KH: int, KW: int, stride: Any,
                       padding: Any) -> tuple[Any, list]:
    """The conv2d tutorial template (see the module docstring)."""
    if N != 1:
        raise InstantiationError(f"tutorial/conv2d_no_batching: only batch size 1 is supported, got {N}")
    data = te.placeholder((N, CI, H, W), name="data")
    kernel = te.placeholder((CO, CI, KH, KW), name="kernel")
    conv = conv2d_nchw(data, kernel, stride, padding, dilation=1, out_dtype="float32")
    s = create_schedule([conv.op])

    n, f, y, x = s[conv].op.axis
    rc, ry, rx = s[conv].op.reduce_axis
    cfg = get_config()
    cfg.define_split("tile_f", f, num_outputs=4)
    cfg.define_split("tile_y", y, num_outputs=4)
    cfg.define_split("tile_x", x, num_outputs=4)
    cfg.define_split("tile_rc", rc, num_outputs=3)
    cfg.define_split("tile_ry", ry, num_outputs=3)
    cfg.define_split("tile_rx", rx, num_outputs=3)
    cfg.define_knob("auto_unroll_max_step", [0, 512, 1500])
    cfg.define_knob("unroll_explicit", [0, 1])

    pad_data = s[conv].op.input_tensors[0]
    s[pad_data].compute_inline()

    output = conv
    OL = s.cache_write(conv, "local")
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
    cfg.add_flop(2 * N * CO * _out_size(conv) * CI * KH * KW)
    return s, [data, kernel, conv]


def _unroll_innermost(stage: Any, loops: list[tuple[Any, int]], max_step: int) -> None:
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
