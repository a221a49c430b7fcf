"""``conv2d_nchw.cuda``: TVM's direct NCHW convolution for NVIDIA GPUs (``topi/cuda/conv2d_direct.py``).

Knobs, in TVM's order (so TVM's cuda log indices denote the same configs here): ``tile_f``,
``tile_y``, ``tile_x`` (4-way splits of the output channels, rows and columns into block,
virtual thread, thread and inner parts), ``tile_rc``, ``tile_ry``, ``tile_rx`` (2-way splits of
the input channels and the window), ``auto_unroll_max_step`` ([0, 512, 1500]) and
``unroll_explicit`` ([0, 1]).

Each block computes a ``tile_f x tile_y x tile_x`` output tile; each thread accumulates its
``fi x yi x xi`` part (times the virtual threads) in a ``local`` stage.  Per step of the outer
reduction loops the block's threads fetch the padded-input window and the kernel slice the step
reads into ``shared`` memory together.  Without a tuned record the config is a fixed one that
fits any GPU (TVM takes one from its tophub reference log instead).

Template arguments are TVM's workload: ``data, kernel, strides, padding, dilation, out_dtype``
(tensors as ``["TENSOR", shape, dtype]`` in a job or a log).
"""

from __future__ import annotations

from collections.abc import Sequence

from tunecli.engine import te
from tunecli.engine.ops import baseline
from tunecli.engine.ops import reference as ref
from tunecli.engine.ops.arm_cpu.conv2d_spatial_pack import declare_conv2d_spatial_pack
from tunecli.engine.ops.cuda.gpu_schedule import (
    bind_output_tiles,
    cooperative_fetch,
    define_output_tiles,
    define_unroll_knobs,
    start_conv_schedule,
    unroll_pragmas,
)
from tunecli.engine.ops.nn.conv2d import conv2d_nchw
from tunecli.engine.ops.strategy import Strategy
from tunecli.engine.schedule import Schedule
from tunecli.engine.task.space import ConfigSpace, OtherOptionEntity
from tunecli.engine.te.window import IntPair, Padding

declare_conv2d_cuda = declare_conv2d_spatial_pack


def define_conv2d_cuda_space(cfg: ConfigSpace, f: int, y: int, x: int, rc: int, ry: int, rx: int) -> None:
    """TVM's knobs of ``conv2d_nchw.cuda``; a fallback config gets a small legal tiling."""
    define_output_tiles(cfg, f, y, x)
    cfg.define_split("tile_rc", cfg.axis(rc), num_outputs=2)
    cfg.define_split("tile_ry", cfg.axis(ry), num_outputs=2)
    cfg.define_split("tile_rx", cfg.axis(rx), num_outputs=2)
    define_unroll_knobs(cfg, [0, 512, 1500])
    if cfg.is_fallback:
        cfg.fallback_split("tile_f", [-1, 1, 8, 2])
        cfg.fallback_split("tile_y", [-1, 1, 8, 1])
        cfg.fallback_split("tile_x", [-1, 1, 8, 1])
        cfg.fallback_split("tile_rc", [-1, 8])
        cfg.fallback_split("tile_ry", [-1, ry])
        cfg.fallback_split("tile_rx", [-1, rx])
        cfg["auto_unroll_max_step"] = OtherOptionEntity(512)
        cfg["unroll_explicit"] = OtherOptionEntity(1)


def conv2d_cuda_compute(cfg: ConfigSpace, data: te.Tensor, kernel: te.Tensor, stride: IntPair,
                        padding: Padding, dilation: IntPair, out_dtype: str) -> te.Tensor:
    """``nn.conv2d_nchw``, with TVM's knobs defined on its axes and its FLOPs counted."""
    conv = conv2d_nchw(data, kernel, stride, padding, dilation, out_dtype)
    n, co, oh, ow = (int(d) for d in conv.shape)
    _, ci, kh, kw = (int(d) for d in kernel.shape)
    define_conv2d_cuda_space(cfg, co, oh, ow, ci, kh, kw)
    cfg.add_flop(2 * n * co * oh * ow * ci * kh * kw)
    return conv


def schedule_conv2d_cuda(cfg: ConfigSpace, outs: Sequence[te.Tensor],
                         epilogue: te.Tensor | None = None) -> Schedule:
    """TVM's ``schedule_direct_cuda`` (module docstring); an epilogue writes the output tile."""
    stages = start_conv_schedule(outs, epilogue)
    s, output, OL, AA, WW = stages.s, stages.output, stages.OL, stages.AA, stages.WW
    kernel_scope, _, tx = bind_output_tiles(cfg, s, output)
    s[OL].compute_at(s[output], tx)

    n, f, y, x = s[OL].op.axis
    rc, ry, rx = s[OL].op.reduce_axis
    rco, rci = cfg["tile_rc"].apply(s, OL, rc)
    ryo, ryi = cfg["tile_ry"].apply(s, OL, ry)
    rxo, rxi = cfg["tile_rx"].apply(s, OL, rx)
    s[OL].reorder(rco, ryo, rxo, rci, ryi, rxi, n, f, y, x)
    s[AA].compute_at(s[OL], rxo)
    s[WW].compute_at(s[OL], rxo)
    for load in (AA, WW):
        cooperative_fetch(cfg, s, load)
    unroll_pragmas(cfg, s, output, kernel_scope)
    return s


CONV2D_NCHW_CUDA = Strategy(
    op="conv2d_nchw", target_key="cuda", name="conv2d_nchw.cuda", declare=declare_conv2d_cuda,
    compute=conv2d_cuda_compute, schedule=schedule_conv2d_cuda, reference=ref.conv2d_nchw_python,
    outputs=("out",), summary="TVM's direct GPU template (knobs and arguments as in TVM's cuda logs)",
    baseline=baseline.CONV2D_NCHW)
