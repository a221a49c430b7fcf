"""``depthwise_conv2d_nchw.arm_cpu``: TVM's ARM depthwise NCHW convolution template.

The knobs, their order and their meaning are TVM's (``topi/arm_cpu/depthwise_conv2d.py``), so a
config index of TVM's ``arm_cpu`` tophub logs denotes the same entity here: ``tile_c``,
``tile_h``, ``tile_w`` split the output channels, rows and columns into ``(outer, VC | VH |
VW)``; ``ann`` unrolls (or not) the ``VH`` and ``VW`` loops and unrolls or vectorizes the ``VC``
loop of each output block.

Each ``VC x VH x VW`` output block accumulates in a local stage computed at the block's column
loop, with the two window reductions outside the block, and the channel blocks run in parallel.
TVM also repacks the padded input and the kernel into ``VC``-channel blocks (cache_read /
cache_write relayouts); here they are read in place, so the knobs tile and annotate the same
loops over the operator's own layout. Arguments are TVM's: ``data, kernel, strides, padding,
dilation, out_dtype`` (``data [N, C, H, W]``, ``kernel [C, multiplier, KH, KW]``).
"""

from __future__ import annotations

from collections.abc import Sequence

from tunecli.engine import te
from tunecli.engine.ops import baseline
from tunecli.engine.ops import reference as ref
from tunecli.engine.ops.arm_cpu.conv2d_spatial_pack import declare_conv2d_spatial_pack
from tunecli.engine.ops.epilogue import create_group_schedule, output_and_accumulator
from tunecli.engine.ops.nn.depthwise_conv2d import depthwise_conv2d_nchw
from tunecli.engine.ops.strategy import Strategy
from tunecli.engine.schedule import Schedule
from tunecli.engine.task.space import ConfigSpace
from tunecli.engine.te.window import IntPair, Padding, conv2d_output_shape

#: ``data [N, C, H, W]``, ``kernel [C, multiplier, KH, KW]`` and the window attributes (TVM's order).
declare_depthwise_conv2d = declare_conv2d_spatial_pack


def depthwise_conv2d_arm_compute(cfg: ConfigSpace, data: te.Tensor, kernel: te.Tensor, stride: IntPair,
                                 padding: Padding,
                                 dilation: IntPair, out_dtype: str) -> te.Tensor:
    """TVM's knobs (module docstring) on the output's axes, then ``nn.depthwise_conv2d_nchw``."""
    n, c, h, w = (int(d) for d in data.shape)
    _, multiplier, kh, kw = (int(d) for d in kernel.shape)
    oh, ow, _ = conv2d_output_shape((h, w), (kh, kw), stride, padding, dilation)
    _, vc = cfg.define_split("tile_c", cfg.axis(c * multiplier), num_outputs=2)
    _, vh = cfg.define_split("tile_h", cfg.axis(oh), num_outputs=2)
    _, vw = cfg.define_split("tile_w", cfg.axis(ow), num_outputs=2)
    cfg.define_annotate("ann", [vh, vw, vc], policy="try_unroll_vec")
    cfg.add_flop(2 * n * c * multiplier * oh * ow * kh * kw)
    return depthwise_conv2d_nchw(data, kernel, stride, padding, dilation, out_dtype)


def schedule_depthwise_conv2d_arm(cfg: ConfigSpace, outs: Sequence[te.Tensor],
                                  epilogue: te.Tensor | None = None) -> Schedule:
    """Tile the output into ``tile_c x tile_h x tile_w`` blocks, annotated by ``ann``."""
    (conv,) = outs
    s = create_group_schedule(outs, epilogue)
    padded = conv.op.input_tensors[0]
    if "pad" not in padded.op.tag:
        padded = conv.op.input_tensors[1]
    if padded.op.input_tensors:  # a padding stage (a placeholder when there is no padding)
        s[padded].compute_inline()

    out, acc = output_and_accumulator(s, conv, epilogue)
    n, c, h, w = s[out].op.axis
    co, vc = cfg["tile_c"].apply(s, out, c)
    oh, vh = cfg["tile_h"].apply(s, out, h)
    ow, vw = cfg["tile_w"].apply(s, out, w)
    s[out].reorder(n, co, oh, ow, vh, vw, vc)
    s[out].parallel(s[out].fuse(n, co))
    s[acc].compute_at(s[out], ow)

    n, c, h, w = s[acc].op.axis
    dh, dw = s[acc].op.reduce_axis
    s[acc].reorder(n, dh, dw, h, w, c)
    tiles = [cfg["tile_h"].size[-1], cfg["tile_w"].size[-1], cfg["tile_c"].size[-1]]
    cfg["ann"].apply(s, acc, [h, w, c], axis_lens=tiles, max_unroll=16, cfg=cfg)
    return s


DEPTHWISE_CONV2D_NCHW_ARM = Strategy(
    op="depthwise_conv2d_nchw", target_key="arm_cpu", name="depthwise_conv2d_nchw.arm_cpu",
    declare=declare_depthwise_conv2d, compute=depthwise_conv2d_arm_compute,
    schedule=schedule_depthwise_conv2d_arm, reference=ref.depthwise_conv2d_python_nchw, outputs=("out",),
    summary="TVM's ARM depthwise template (knobs and arguments as in TVM's arm_cpu logs)",
    baseline=baseline.DEPTHWISE_CONV2D_NCHW)
