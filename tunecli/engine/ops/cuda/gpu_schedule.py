"""Pieces shared by the GPU templates: their knobs, the start of a convolution's schedule, thread
binding of a tiled output and cooperative fetches."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from tunecli.engine import te
from tunecli.engine.ops.epilogue import create_group_schedule, output_and_accumulator
from tunecli.engine.schedule import Schedule
from tunecli.engine.task.space import ConfigSpace


def divisor_at_most(n: int, limit: int) -> int:
    """The largest divisor of ``n`` that is ``<= limit``."""
    return next(d for d in range(min(limit, n), 0, -1) if n % d == 0)


def define_output_tiles(cfg: ConfigSpace, f: int, y: int, x: int) -> None:
    """The knobs ``bind_output_tiles`` reads: ``tile_f/y/x`` split the output's channels, rows and
    columns 4 ways."""
    cfg.define_split("tile_f", cfg.axis(f), num_outputs=4)
    cfg.define_split("tile_y", cfg.axis(y), num_outputs=4)
    cfg.define_split("tile_x", cfg.axis(x), num_outputs=4)


def define_unroll_knobs(cfg: ConfigSpace, max_steps: list[int]) -> None:
    """The knobs ``unroll_pragmas`` reads: ``auto_unroll_max_step`` (one of ``max_steps``) and
    ``unroll_explicit``."""
    cfg.define_knob("auto_unroll_max_step", max_steps)
    cfg.define_knob("unroll_explicit", [0, 1])


@dataclass(frozen=True)
class ConvStages:
    """The stages TVM's GPU convolution schedules start from (``start_conv_schedule``).

    Attributes
    ----------
    s : Schedule
    output : te.Tensor
        The group's output (the epilogue when there is one).
    OL : te.Tensor
        The convolution's ``local`` accumulator.
    AA, WW : te.Tensor
        ``shared`` copies of the padded data and of the kernel, read by ``OL``.
    """

    s: Schedule
    output: te.Tensor
    OL: te.Tensor
    AA: te.Tensor
    WW: te.Tensor


def start_conv_schedule(outs: Sequence[te.Tensor], epilogue: te.Tensor | None) -> ConvStages:
    """The group's schedule with the padding inlined, the output accumulated in ``local`` memory
    and the accumulator reading the data and the kernel from ``shared`` copies."""
    (conv,) = outs
    s = create_group_schedule(outs, epilogue)
    pad_data, kernel = conv.op.input_tensors
    inline_padding(s, pad_data)
    output, OL = output_and_accumulator(s, conv, epilogue)
    AA = s.cache_read(pad_data, "shared", [OL])
    WW = s.cache_read(kernel, "shared", [OL])
    return ConvStages(s, output, OL, AA, WW)


def inline_padding(s: Schedule, padded: te.Tensor) -> None:
    """Inline the padding stage of a convolution (nothing when its input 0 is the placeholder)."""
    if padded.op.input_tensors:
        s[padded].compute_inline()


def bind_output_tiles(cfg: ConfigSpace, s: Schedule,
                      output: te.Tensor) -> tuple[te.IterVar, te.IterVar, te.IterVar]:
    """TVM's NCHW output tiling: ``tile_f/y/x`` split each axis into (block, vthread, thread, inner).

    Binds them to ``blockIdx.z/y/x``, ``vthread`` and ``threadIdx.z/y/x``, orders the loops
    ``bf, by, bx, vf, vy, vx, tf, ty, tx, fi, yi, xi`` and returns ``(kernel_scope, bx, tx)``:
    the loop the unroll pragmas go on, the innermost block loop and the innermost thread loop.
    """
    n, f, y, x = s[output].op.axis
    kernel_scope, n = s[output].split(n, nparts=1)
    bf, vf, tf, fi = cfg["tile_f"].apply(s, output, f)
    by, vy, ty, yi = cfg["tile_y"].apply(s, output, y)
    bx, vx, tx, xi = cfg["tile_x"].apply(s, output, x)
    bf = s[output].fuse(n, bf)
    for axis, tag in ((bf, "blockIdx.z"), (by, "blockIdx.y"), (bx, "blockIdx.x"), (vf, "vthread"),
                      (vy, "vthread"), (vx, "vthread"), (tf, "threadIdx.z"), (ty, "threadIdx.y"),
                      (tx, "threadIdx.x")):
        s[output].bind(axis, te.thread_axis(tag))
    s[output].reorder(bf, by, bx, vf, vy, vx, tf, ty, tx, fi, yi, xi)
    return kernel_scope, bx, tx


def unroll_pragmas(cfg: ConfigSpace, s: Schedule, output: te.Tensor, kernel_scope: te.IterVar) -> None:
    """The ``auto_unroll_max_step`` and ``unroll_explicit`` knobs as pragmas on ``kernel_scope``."""
    s[output].pragma(kernel_scope, "auto_unroll_max_step", cfg["auto_unroll_max_step"].val)
    s[output].pragma(kernel_scope, "unroll_explicit", cfg["unroll_explicit"].val)


def cooperative_fetch(cfg: ConfigSpace, s: Schedule, load: te.Tensor) -> None:
    """Spread a shared-memory fetch stage over the block's threads (TVM's conv2d fetch): its
    axes fused, then split into ``tile_f/y/x``'s thread counts bound to ``threadIdx.z/y/x``."""
    fused = s[load].fuse(*s[load].op.axis)
    tz, fused = s[load].split(fused, nparts=cfg["tile_f"].size[2])
    ty, fused = s[load].split(fused, nparts=cfg["tile_y"].size[2])
    tx, fused = s[load].split(fused, nparts=cfg["tile_x"].size[2])
    s[load].bind(tz, te.thread_axis("threadIdx.z"))
    s[load].bind(ty, te.thread_axis("threadIdx.y"))
    s[load].bind(tx, te.thread_axis("threadIdx.x"))
