"""``depthwise_conv2d_nchw.cuda``: TVM's depthwise NCHW convolution for NVIDIA GPUs.

Knobs, in TVM's order (``topi/cuda/depthwise_conv2d.py``): ``tile_f``, ``tile_y``, ``tile_x``
(4-way splits of the output channels, rows and columns into block, virtual thread, thread and
inner parts), ``auto_unroll_max_step`` ([0, 256, 1500]) and ``unroll_explicit`` ([0, 1]).

Each block fetches the padded-input window and the filters of its output tile into ``shared``
memory once (the block's threads together, innermost ``threadIdx.x``), each thread copies what
it reads into ``local`` stages and accumulates its outputs in a ``local`` stage.  Without a
tuned record the config is a fixed one that fits any GPU (TVM takes one from its tophub
reference log, with ``unroll_explicit`` 0).

Template arguments are TVM's workload: ``data, kernel, strides, padding, dilation, out_dtype``
(``data [N, C, H, W]``, ``kernel [C, multiplier, KH, KW]``).
"""

from __future__ import annotations

from collections.abc import Sequence

from tunecli.engine import te
from tunecli.engine.ops import baseline
from tunecli.engine.ops import reference as ref
from tunecli.engine.ops.arm_cpu.depthwise_conv2d import declare_depthwise_conv2d
from tunecli.engine.ops.cuda.gpu_schedule import (
    bind_output_tiles,
    define_output_tiles,
    define_unroll_knobs,
    start_conv_schedule,
    unroll_pragmas,
)
from tunecli.engine.ops.nn.depthwise_conv2d import depthwise_conv2d_nchw
from tunecli.engine.ops.strategy import Strategy
from tunecli.engine.schedule import Schedule
from tunecli.engine.task.space import ConfigSpace, OtherOptionEntity
from tunecli.engine.te.window import IntPair, Padding


def depthwise_conv2d_cuda_compute(cfg: ConfigSpace, data: te.Tensor, kernel: te.Tensor, stride: IntPair,
                                  padding: Padding,
                                  dilation: IntPair, out_dtype: str) -> te.Tensor:
    """``nn.depthwise_conv2d_nchw``, with TVM's knobs defined on its output axes."""
    conv = depthwise_conv2d_nchw(data, kernel, stride, padding, dilation, out_dtype)
    n, c, oh, ow = (int(d) for d in conv.shape)
    kh, kw = (int(d) for d in kernel.shape[2:])
    define_output_tiles(cfg, c, oh, ow)
    define_unroll_knobs(cfg, [0, 256, 1500])
    if cfg.is_fallback:
        cfg.fallback_split("tile_f", [-1, 1, 4, 1])
        cfg.fallback_split("tile_y", [-1, 1, 8, 1])
        cfg.fallback_split("tile_x", [-1, 1, 8, 1])
        cfg["auto_unroll_max_step"] = OtherOptionEntity(256)
        cfg["unroll_explicit"] = OtherOptionEntity(0)
    cfg.add_flop(2 * n * c * oh * ow * kh * kw)
    return conv


def schedule_depthwise_conv2d_cuda(cfg: ConfigSpace, outs: Sequence[te.Tensor],
                                   epilogue: te.Tensor | None = None) -> Schedule:
    """TVM's ``schedule_depthwise_conv2d_nchw`` for cuda (module docstring)."""
    stages = start_conv_schedule(outs, epilogue)
    s, output, OL, AA, WW = stages.s, stages.output, stages.OL, stages.AA, stages.WW
    AL = s.cache_read(AA, "local", [OL])
    WL = s.cache_read(WW, "local", [OL])

    kernel_scope, bx, tx = bind_output_tiles(cfg, s, output)
    s[OL].compute_at(s[output], tx)
    s[AA].compute_at(s[output], bx)
    s[WW].compute_at(s[output], bx)
    s[AL].compute_at(s[output], tx)
    s[WL].compute_at(s[output], tx)
    for load in (AA, WW):
        fused = s[load].fuse(*s[load].op.axis)
        fused, ltx = s[load].split(fused, factor=cfg["tile_x"].size[2])
        fused, lty = s[load].split(fused, factor=cfg["tile_y"].size[2])
        fused, ltz = s[load].split(fused, factor=cfg["tile_f"].size[2])
        s[load].bind(ltz, te.thread_axis("threadIdx.z"))
        s[load].bind(lty, te.thread_axis("threadIdx.y"))
        s[load].bind(ltx, te.thread_axis("threadIdx.x"))
    unroll_pragmas(cfg, s, output, kernel_scope)
    return s


DEPTHWISE_CONV2D_NCHW_CUDA = Strategy(
    op="depthwise_conv2d_nchw", target_key="cuda", name="depthwise_conv2d_nchw.cuda",
    declare=declare_depthwise_conv2d, compute=depthwise_conv2d_cuda_compute,
    schedule=schedule_depthwise_conv2d_cuda, reference=ref.depthwise_conv2d_python_nchw, outputs=("out",),
    summary="TVM's depthwise GPU template (knobs and arguments as in TVM's cuda logs)",
    baseline=baseline.DEPTHWISE_CONV2D_NCHW)
