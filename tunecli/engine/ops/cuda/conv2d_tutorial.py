"""The GPU schedule of ``tutorial/conv2d_no_batching`` (TVM's ``tune_conv2d_cuda.py``), as the tutorial
writes it; ``ops.tutorial`` uses it when the template is instantiated for a GPU target.

The knobs are the tutorial's (defined by ``ops.tutorial``: ``tile_f/y/x`` 4-way, ``tile_rc/ry/rx``
3-way, ``auto_unroll_max_step``, ``unroll_explicit``).  Each block computes a ``tile_f x tile_y x
tile_x`` output tile, each thread accumulates its part in a ``local`` stage; per step of the
outer reduction loops the block's threads fetch the input window and the kernel slice into
``shared`` memory together, and each thread copies what one middle step reads into ``local``
stages.  As in the tutorial, ``tile_rx`` splits the window rows and ``tile_ry`` its columns (the
tutorial's layers have square kernels).
"""

from __future__ import annotations

from collections.abc import Sequence

from tunecli.engine import te
from tunecli.engine.ops.cuda.gpu_schedule import (
    bind_output_tiles,
    cooperative_fetch,
    start_conv_schedule,
    unroll_pragmas,
)
from tunecli.engine.schedule import Schedule
from tunecli.engine.task.space import ConfigSpace


def schedule_conv2d_no_batching_cuda(cfg: ConfigSpace, outs: Sequence[te.Tensor],
                                     epilogue: te.Tensor | None = None) -> Schedule:
    """The tutorial's GPU schedule (module docstring); the knobs must be defined on ``cfg``."""
    stages = start_conv_schedule(outs, epilogue)
    s, output, OL, AA, WW = stages.s, stages.output, stages.OL, stages.AA, stages.WW
    AL = s.cache_read(AA, "local", [OL])
    WL = s.cache_read(WW, "local", [OL])

    kernel_scope, _, tx = bind_output_tiles(cfg, s, output)
    s[OL].compute_at(s[output], tx)

    n, f, y, x = s[OL].op.axis
    rc, ry, rx = s[OL].op.reduce_axis
    rco, rcm, rci = cfg["tile_rc"].apply(s, OL, rc)
    ryo, rym, ryi = cfg["tile_rx"].apply(s, OL, ry)
    rxo, rxm, rxi = cfg["tile_ry"].apply(s, OL, rx)
    s[OL].reorder(rco, ryo, rxo, rcm, rym, rxm, rci, ryi, rxi, n, f, y, x)
    s[AA].compute_at(s[OL], rxo)
    s[WW].compute_at(s[OL], rxo)
    s[AL].compute_at(s[OL], rxm)
    s[WL].compute_at(s[OL], rxm)
    for load in (AA, WW):
        cooperative_fetch(cfg, s, load)
    unroll_pragmas(cfg, s, output, kernel_scope)
    return s
