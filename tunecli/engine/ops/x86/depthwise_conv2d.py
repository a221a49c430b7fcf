"""``depthwise_conv2d_nchw.x86``: depthwise NCHW convolution with register-tiled output blocks.

The output is tiled into ``CB x HB x WB`` blocks (channels x rows x columns) accumulated in a
``cache_write(.., "local")`` stage computed at the block loop, with the two window reductions
outside the block so the accumulators stay in registers: WB is vectorized (along the output
row), CB and HB unrolled.

Template arguments, in order: ``N, H, W, C, multiplier, KH, KW, stride, padding, dilation,
dtype``.  Kernel arguments: ``data [N, C, H, W]``, ``kernel [C, multiplier, KH, KW]``, output
``[N, C * multiplier, OH, OW]``.

Knobs: ``tile_c`` (split of the output channels, inner CB <= 8), ``tile_h`` (split of OH, inner
HB <= 4), ``tile_w`` (split of OW, inner WB <= 32), ``unroll_kw`` (0/1), ``compute_pad``
("root" / "inline"; only defined when there is padding), ``parallel`` (0/1).
"""

from __future__ import annotations

from collections.abc import Sequence

from tunecli.engine import te
from tunecli.engine.ops import baseline
from tunecli.engine.ops import reference as ref
from tunecli.engine.ops.epilogue import create_group_schedule, output_and_accumulator
from tunecli.engine.ops.nn.depthwise_conv2d import depthwise_conv2d_nchw
from tunecli.engine.ops.strategy import OpCall, Strategy
from tunecli.engine.ops.x86.conv2d import declare_window_op
from tunecli.engine.schedule import Schedule
from tunecli.engine.task.space import ConfigSpace
from tunecli.engine.te.window import IntPair, Padding, conv2d_output_shape

MAX_CB = 8
MAX_HB = 4
MAX_WB = 32


def declare_depthwise_conv2d_nchw(N: int, H: int, W: int, C: int, multiplier: int, KH: int, KW: int,
                                  stride: IntPair, padding: Padding, dilation: IntPair = 1,
                                  dtype: str = "float32") -> OpCall:
    """``data [N, C, H, W]`` and ``kernel [C, multiplier, KH, KW]`` placeholders and the window attributes."""
    return declare_window_op((N, C, H, W), (C, multiplier, KH, KW), stride, padding, dilation, dtype)


def depthwise_conv2d_nchw_x86_compute(cfg: ConfigSpace, data: te.Tensor, kernel: te.Tensor, stride: IntPair,
                                      padding: Padding,
                                      dilation: IntPair, out_dtype: str) -> te.Tensor:
    """The knobs of the module docstring, then ``nn.depthwise_conv2d_nchw``."""
    n, c, h, w = data.shape
    _, multiplier, kh, kw = kernel.shape
    oh, ow, pads = conv2d_output_shape((h, w), (kh, kw), stride, padding, dilation)
    cfg.define_split("tile_c", c * multiplier, num_outputs=2, filter=lambda e: e.size[-1] <= MAX_CB)
    cfg.define_split("tile_h", oh, num_outputs=2, filter=lambda e: e.size[-1] <= MAX_HB)
    cfg.define_split("tile_w", ow, num_outputs=2, filter=lambda e: e.size[-1] <= MAX_WB)
    cfg.define_knob("unroll_kw", [0, 1])
    if any(pads):
        cfg.define_knob("compute_pad", ["root", "inline"])
    cfg.define_knob("parallel", [0, 1])
    cfg.add_flop(2 * n * c * multiplier * oh * ow * kh * kw)
    return depthwise_conv2d_nchw(data, kernel, stride, padding, dilation, out_dtype)


def schedule_depthwise_conv2d_nchw(cfg: ConfigSpace, outs: Sequence[te.Tensor],
                                   epilogue: te.Tensor | None = None) -> Schedule:
    """Schedule the padding, accumulator and output stages of a depthwise convolution."""
    (out,) = outs
    s = create_group_schedule(outs, epilogue)
    _schedule_depthwise(cfg, s, out, epilogue)
    return s


DEPTHWISE_CONV2D_NCHW = Strategy(
    op="depthwise_conv2d_nchw", target_key="cpu", name="depthwise_conv2d_nchw.x86",
    declare=declare_depthwise_conv2d_nchw, compute=depthwise_conv2d_nchw_x86_compute,
    schedule=schedule_depthwise_conv2d_nchw, reference=ref.depthwise_conv2d_python_nchw, outputs=("out",),
    baseline=baseline.DEPTHWISE_CONV2D_NCHW)


def _schedule_depthwise(cfg: ConfigSpace, s: Schedule, conv: te.Tensor, epilogue: te.Tensor | None) -> None:
    """Schedule the padding, accumulator and output stages of a depthwise convolution."""
    parallel = bool(cfg["parallel"].val)
    padded = conv.op.input_tensors[0]
    if "pad" not in padded.op.tag:
        padded = conv.op.input_tensors[1]
    pads_anything = padded.shape != padded.op.input_tensors[0].shape
    if not pads_anything or cfg["compute_pad"].val == "inline":
        s[padded].compute_inline()
    else:
        b, c, y, _ = s[padded].op.axis
        fused = s[padded].fuse(b, c, y)
        if parallel:
            s[padded].parallel(fused)

    out, OL = output_and_accumulator(s, conv, epilogue)
    b, c, y, x = s[out].op.axis
    co, ci = cfg["tile_c"].apply(s, out, c)
    yo, yi = cfg["tile_h"].apply(s, out, y)
    xo, xi = cfg["tile_w"].apply(s, out, x)
    s[out].reorder(b, co, yo, xo, ci, yi, xi)
    fused = s[out].fuse(b, co, yo)
    if parallel:
        s[out].parallel(fused)
    s[out].unroll(ci)
    s[out].unroll(yi)
    s[out].vectorize(xi)

    s[OL].compute_at(s[out], xo)
    b, c, y, x = s[OL].op.axis
    di, dj = s[OL].op.reduce_axis
    s[OL].reorder(b, di, dj, c, y, x)
    if cfg["unroll_kw"].val:
        s[OL].unroll(dj)
    s[OL].unroll(c)
    s[OL].unroll(y)
    s[OL].vectorize(x)
