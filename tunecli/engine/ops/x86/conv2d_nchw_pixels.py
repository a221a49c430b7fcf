"""``conv2d_nchw_pixels.x86``: a direct NCHW convolution vectorized over output pixels (kernel jobs).

The result is computed in NCHW itself: register tiles of ``mr`` output channels by ``lines`` output
rows of ``columns`` output columns, the columns vectorized, so each tile row is stored as whole
vectors of one channel's row (no channel-blocked result to unblock).  Per input channel and
kernel tap, a tile row takes one vector load of input columns and each channel row one broadcast
weight.  The input columns of a stride ``s`` are made contiguous by a first stage (once per call)
that pads the data and splits each padded row into its ``s`` phases, ``[N, CI, H + pads, s, XX]``
(``XX = OW + (KW - 1) // s``): input column ``x * s + kw`` is phase ``kw % s``, position
``x + kw // s``.  Where a convolution has few input channels and a wide window (a network's 7x7
stem over 3 channels) a channel-blocked schedule gets little work per broadcast input value and
writes its NCHW result a value at a time; this one keeps every load and store a vector.

Template arguments are ``conv2d_nchw.x86``'s (``N, H, W, CI, CO, KH, KW, stride, padding,
dilation, dtype``); dilation 1 and float32 only.  Kernel arguments: ``data [N, CI, H, W]``, the
weight packed ``[CO/mr, CI, KH, KW, mr]`` (prepared once, as ``relay.build`` prepares a constant
weight: ``conv2d_nchw_blocked.weight_for_kernel``) and ``out [N, CO, OH, OW]``.

Knobs: ``tile_co`` (split of CO, inner ``mr``, at most ``conv2d_nchw_rows.MAX_ROWS``), ``tile_oh``
(split of OH, inner ``lines``, at most :data:`MAX_LINES`), ``tile_ow`` (split of OW, inner
``columns``, at most ``conv2d_nchw_rows.MAX_COLUMNS``) and ``unroll_kw`` (the kernel's columns
unrolled inside the tile).  The fallback (:func:`define_pixels_space`) takes a vector of columns,
two lines where the rows pair up, as many channel rows as the registers hold beside them, and
unrolls the kernel's columns.
"""

from __future__ import annotations

from collections.abc import Sequence

from tunecli.engine import te
from tunecli.engine.ir import expr as E
from tunecli.engine.ops import baseline
from tunecli.engine.ops.epilogue import create_group_schedule, output_and_accumulator
from tunecli.engine.ops.strategy import OpCall, Strategy
from tunecli.engine.ops.x86.conv2d import declare_conv2d_nchw
from tunecli.engine.ops.x86.conv2d_nchw_rows import (
    baseline_inputs,
    conv2d_nchw_rows_python,
    define_row_tiles,
    fallback_rows,
    packed_weight,
    set_row_tiles,
    tile_rows,
)
from tunecli.engine.ops.x86.conv2d_nchwc import (
    fallback_register_tile,
    fp32_lanes,
    largest_divisor,
    vector_ops,
)
from tunecli.engine.schedule import Schedule
from tunecli.engine.task.space import ConfigSpace, OtherOptionEntity
from tunecli.engine.te.window import IntPair, Padding, conv2d_output_shape, pair
from tunecli.errors import InstantiationError

PIXELS = "conv2d_nchw_pixels.x86"
MAX_LINES = 4  # output rows of a register tile
PHASES_TAG = "injective,column_phases"


def declare_conv2d_nchw_pixels(N: int, H: int, W: int, CI: int, CO: int, KH: int, KW: int, stride: IntPair,
                               padding: Padding, dilation: IntPair = 1, dtype: str = "float32") -> OpCall:
    """``conv2d_nchw.x86``'s placeholders; dilation 1 and float32 only."""
    if pair(dilation, "dilation") != (1, 1) or dtype != "float32":
        raise InstantiationError(f"{PIXELS}: only float32 without dilation, got dilation {dilation}, {dtype}")
    return declare_conv2d_nchw(N, H, W, CI, CO, KH, KW, stride, padding, dilation, dtype)


def define_pixels_space(cfg: ConfigSpace, channels_out: int, height: int, width: int) -> None:
    """The knobs of the module docstring over an ``height x width`` output; the fallback's."""
    define_row_tiles(cfg, channels_out, height, width, lines=lambda s: s.size[-1] <= MAX_LINES)
    cfg.define_knob("unroll_kw", [True, False])
    if cfg.is_fallback:
        lanes = fp32_lanes()
        columns = largest_divisor(width, lanes)
        lines = 2 if height % 2 == 0 else 1
        rows = fallback_rows(channels_out, lines * vector_ops(columns, lanes), fallback_register_tile())
        set_row_tiles(cfg, channels_out, height, width, (rows, lines, columns))
        cfg["unroll_kw"] = OtherOptionEntity(True)


def pack_conv2d_nchw_pixels(cfg: ConfigSpace, call: OpCall) -> OpCall:
    """The kernel's inputs: NCHW ``data`` and the ``[CO/mr, CI, KH, KW, mr]`` weight."""
    data, kernel = call.inputs
    co, ci, kh, kw = kernel.shape
    oh, ow, _ = conv2d_output_shape(data.shape[2:], (kh, kw), call.attrs["stride"], call.attrs["padding"], 1)
    define_pixels_space(cfg, co, oh, ow)
    mr = cfg["tile_co"].size[-1]
    packed = te.placeholder((co // mr, ci, kh, kw, mr), dtype=kernel.dtype, name="kernel")
    return OpCall((data, packed), call.attrs)


def column_phases(data: te.Tensor, kernel_hw: tuple[int, int], stride: IntPair,
                  padding: Padding) -> te.Tensor:
    """``[N, C, H + pads, s, XX]``: the padded data, each row split into its ``s`` column phases
    (the module docstring), zero outside the data."""
    n, c, h, w = data.shape
    sw = pair(stride, "stride")[1]
    _, ow, (top, left, bottom, _) = conv2d_output_shape((h, w), kernel_hw, stride, padding, 1)
    width = ow + (kernel_hw[1] - 1) // sw

    def phase(b: E.Expr, i: E.Expr, r: E.Expr, p: E.Expr, x: E.Expr) -> E.Expr:
        col = x * sw + p - left
        inside = te.all(r >= top, r < h + top, col >= 0, col < w)
        return te.if_then_else(inside, data[b, i, r - top, col], E.const(0, data.dtype))

    return te.compute((n, c, h + top + bottom, sw, width), phase, name="data_phases", tag=PHASES_TAG)


def conv2d_nchw_pixels_compute(cfg: ConfigSpace, data: te.Tensor, kernel: te.Tensor, stride: IntPair,
                               padding: Padding, dilation: IntPair, out_dtype: str) -> te.Tensor:
    """``out[b, c, y, x] = sum weight[c, i, kh, kw] * padded[b, i, y * sh + kh, x * sw + kw]`` read
    through :func:`column_phases`; an OIHW kernel is packed by a stage, a 5-D one taken as packed."""
    if pair(dilation, "dilation") != (1, 1):
        raise InstantiationError(f"{PIXELS}: dilation 1 only, got {dilation}")
    n, ci, h, w = data.shape
    if len(kernel.shape) == 4:
        co, _, kh, kw = kernel.shape
    else:
        co, kh, kw = kernel.shape[0] * kernel.shape[4], kernel.shape[2], kernel.shape[3]
    oh, ow, _ = conv2d_output_shape((h, w), (kh, kw), stride, padding, 1)
    define_pixels_space(cfg, co, oh, ow)
    kernel = packed_weight(kernel, cfg["tile_co"].size[-1], PIXELS)
    mr = kernel.shape[4]
    cfg.add_flop(2 * n * co * oh * ow * ci * kh * kw)
    sh, sw = pair(stride, "stride")
    phases = column_phases(data, (kh, kw), stride, padding)
    ri = te.reduce_axis((0, ci), name="ci")
    rh = te.reduce_axis((0, kh), name="kh")
    rw = te.reduce_axis((0, kw), name="kw")
    return te.compute(
        (n, co, oh, ow),
        lambda b, c, y, x: te.sum(phases[b, ri, y * sh + rh, rw % sw, x + rw // sw].astype(out_dtype)
                                  * kernel[c // mr, ri, rh, rw, c % mr].astype(out_dtype), axis=[ri, rh, rw]),
        name="conv2d_nchw_pixels", tag="conv2d_nchw_pixels")


def schedule_conv2d_nchw_pixels(cfg: ConfigSpace, outs: Sequence[te.Tensor],
                                epilogue: te.Tensor | None = None) -> Schedule:
    """``mr x lines x columns`` register tiles, the input channels and kernel taps reduced inside
    them; batch, channel-row blocks and line blocks fused into one parallel loop; the column phases
    computed first, in parallel; an epilogue (bias + relu) writes the tiles."""
    (conv,) = outs
    s = create_group_schedule(outs, epilogue)
    out, acc = output_and_accumulator(s, conv, epilogue)
    for stage in conv.op.input_tensors:
        if getattr(stage.op, "tag", "") == PHASES_TAG:
            b, i, r = s[stage].op.axis[:3]
            s[stage].parallel(s[stage].fuse(b, i, r))
    _, xo, yi, xi = tile_rows(s, conv, out, tuple(cfg[k].size[-1] for k in ("tile_co", "tile_oh", "tile_ow")))
    s[out].unroll(yi)
    s[out].vectorize(xi)
    s[acc].compute_at(s[out], xo)
    b, c, y, x = s[acc].op.axis
    ri, rh, rw = s[acc].op.reduce_axis
    s[acc].reorder(b, ri, rh, rw, c, y, x)
    if cfg["unroll_kw"].val:
        s[acc].unroll(rw)
    s[acc].unroll(c)
    s[acc].unroll(y)
    s[acc].vectorize(x)
    return s


CONV2D_NCHW_PIXELS = Strategy(
    op="conv2d_nchw_pixels", target_key="cpu", name=PIXELS, declare=declare_conv2d_nchw_pixels,
    compute=conv2d_nchw_pixels_compute, schedule=schedule_conv2d_nchw_pixels,
    reference=conv2d_nchw_rows_python, outputs=("out",), pack=pack_conv2d_nchw_pixels,
    baseline=baseline.Baseline("im2col + matmul", baseline.conv2d_nchw, baseline_inputs),
    summary="`conv2d_nchw.x86`'s arguments, no dilation: a direct convolution vectorized over output "
            "pixels, NCHW data and output (the data's column phases split first), the weight packed "
            "`[CO/mr, CI, KH, KW, mr]`; a kernel job's `conv2d_nchw.x86` task of few input channels and "
            "a wide window runs as this on 512-bit-vector x86 targets")
