"""Pieces shared by the GPU templates: thread binding of a tiled output and cooperative fetches."""

from __future__ import annotations

from tunecli.engine import te
from tunecli.engine.schedule import Schedule
from tunecli.engine.task.space import ConfigSpace


def divisor_at_most(n: int, limit: int) -> int:
    """The largest divisor of ``n`` that is ``<= limit``."""
    return next(d for d in range(min(limit, n), 0, -1) if n % d == 0)


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
