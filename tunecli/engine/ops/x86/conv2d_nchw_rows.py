"""NCHW convolutions computed in register tiles of output-channel rows by output pixels.

What ``conv2d_nchw_1x1.x86`` (a GEMM over pixels) and ``conv2d_nchw_pixels.x86`` (a direct
convolution over pixels) share.  The result is computed in NCHW itself: a register tile holds
``mr`` output channels (its *rows*) by ``lines`` output rows of ``columns`` output columns, the
pixels vectorized, so each tile row is stored as vectors of one channel's row.  The weight is
taken packed in rows of ``mr`` output channels, ``[CO/mr, CI, KH, KW, mr]`` (the 1x1 GEMM's drops
the unit kernel axes: ``[CO/mr, CI, mr]``), so that a tile's ``mr`` weights of one input channel
and tap are adjacent; an OIHW weight is packed by a stage of the kernel.

Knobs: ``tile_co`` (split of CO, inner ``mr``, at most :data:`MAX_ROWS`), ``tile_oh`` (split of
OH, inner ``lines``: each template filters it) and ``tile_ow`` (split of OW, inner ``columns``,
at most :data:`MAX_COLUMNS`).  The numpy references and the timing baselines take the packed
weight back to ``[CO, CI, KH, KW]``.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from numpy.typing import DTypeLike

from tunecli.engine import te
from tunecli.engine.ops import reference as ref
from tunecli.engine.ops.x86.conv2d_nchwc import largest_divisor
from tunecli.engine.schedule import Schedule
from tunecli.engine.task.space import ConfigSpace, SplitEntity
from tunecli.engine.te.window import IntPair, Padding
from tunecli.errors import InstantiationError

MAX_COLUMNS = 64  # columns of a register tile
MAX_ROWS = 16  # channel rows of a register tile
WEIGHT_TAG = "injective,layout_transform"


def define_row_tiles(cfg: ConfigSpace, channels_out: int, height: int, width: int,
                     lines: Callable[[SplitEntity], bool]) -> None:
    """The knobs ``tile_co``, ``tile_oh`` (inner factors kept by ``lines``) and ``tile_ow``."""
    cfg.define_split("tile_co", channels_out, num_outputs=2, filter=lambda s: s.size[-1] <= MAX_ROWS)
    cfg.define_split("tile_oh", height, num_outputs=2, filter=lines)
    cfg.define_split("tile_ow", width, num_outputs=2, filter=lambda s: s.size[-1] <= MAX_COLUMNS)


def set_row_tiles(cfg: ConfigSpace, channels_out: int, height: int, width: int,
                  tile: tuple[int, int, int]) -> None:
    """Set ``cfg``'s tile to ``(rows, lines, columns)`` (a fallback config's)."""
    rows, lines, columns = tile
    cfg["tile_co"] = SplitEntity([channels_out // rows, rows])
    cfg["tile_oh"] = SplitEntity([height // lines, lines])
    cfg["tile_ow"] = SplitEntity([width // columns, columns])


def fallback_rows(channels_out: int, row_vectors: int, registers: int) -> int:
    """Channel rows of a fallback tile: the largest divisor of ``channels_out`` (at most
    :data:`MAX_ROWS`) whose accumulators (``row_vectors`` per row) fit ``registers`` vector
    registers beside one row of data.

    Parameters
    ----------
    channels_out : int
    row_vectors : int
        Vector instructions a row of the tile's pixels takes.
    registers : int
        Vector registers for the tile (accumulators and one row of data).

    Returns
    -------
    int
    """
    return largest_divisor(channels_out, min(max((registers - row_vectors) // row_vectors, 1), MAX_ROWS))


def packed_weight(kernel: te.Tensor, mr: int, template: str, squeeze: bool = False) -> te.Tensor:
    """The weight in rows of ``mr`` channels: an OIHW ``kernel`` packed by a stage into ``[CO/mr, CI,
    KH, KW, mr]`` (``squeeze``: a 1x1 kernel into ``[CO/mr, CI, mr]``), a packed one taken as it is.

    Raises
    ------
    InstantiationError
        When a packed kernel's rows are not ``mr`` channels.
    """
    if len(kernel.shape) != 4:
        if kernel.shape[-1] != mr:
            raise InstantiationError(f"{template}: the kernel is packed in rows of {kernel.shape[-1]}, the "
                                     f"config's are {mr}")
        return kernel
    co, ci, kh, kw = kernel.shape
    if squeeze:
        return te.compute((co // mr, ci, mr), lambda c, i, v: kernel[c * mr + v, i, 0, 0],
                          name="kernel_vec", tag=WEIGHT_TAG)
    return te.compute((co // mr, ci, kh, kw, mr), lambda c, i, y, x, v: kernel[c * mr + v, i, y, x],
                      name="kernel_vec", tag=WEIGHT_TAG)


def tile_rows(s: Schedule, conv: te.Tensor, out: te.Tensor, tile: tuple[int, int, int],
              rows_outer: bool = False) -> tuple[te.IterVar, te.IterVar, te.IterVar, te.IterVar]:
    """Tile ``out``, the NCHW stage writing the convolution ``conv``'s result (itself or an
    epilogue), into ``(mr, lines, columns)`` tiles, the channel rows unrolled; batch, channel-row
    blocks and line blocks fused into one parallel loop (``rows_outer``: batch and line blocks
    only, the channel-row blocks inside).  An OIHW weight's packing stage runs in parallel first.

    Returns
    -------
    tuple of IterVar
        The parallel loop, the loop over column blocks (where the accumulator is computed), and
        the tile's lines and columns.
    """
    for stage in conv.op.input_tensors:
        if getattr(stage.op, "tag", "") == WEIGHT_TAG:
            s[stage].parallel(s[stage].op.axis[0])
    mr, lines, columns = tile
    b, c, y, x = s[out].op.axis
    cb, cj = s[out].split(c, factor=mr)
    yo, yi = s[out].split(y, factor=lines)
    xo, xi = s[out].split(x, factor=columns)
    if rows_outer:
        s[out].reorder(b, yo, cb, xo, cj, yi, xi)
        outer = s[out].fuse(b, yo)
    else:
        s[out].reorder(b, cb, yo, xo, cj, yi, xi)
        outer = s[out].fuse(b, cb, yo)
    s[out].parallel(outer)
    s[out].unroll(cj)
    return outer, xo, yi, xi


def pack_rows_weight(weight: np.ndarray, mr: int) -> np.ndarray:
    """``[CO, CI, KH, KW]`` -> ``[CO/mr, CI, KH, KW, mr]`` (a 1x1 GEMM's ``[CO/mr, CI, mr]`` is its
    reshape)."""
    co, ci, kh, kw = weight.shape
    return np.ascontiguousarray(weight.reshape(co // mr, mr, ci, kh, kw).transpose(0, 2, 3, 4, 1))


def unpack_rows_weight(kernel: np.ndarray) -> np.ndarray:
    """``[CO/mr, CI, KH, KW, mr]`` or ``[CO/mr, CI, mr]`` -> ``[CO, CI, KH, KW]``."""
    if kernel.ndim == 3:
        kernel = kernel[:, :, None, None, :]
    cb, ci, kh, kw, mr = kernel.shape
    return np.ascontiguousarray(kernel.transpose(0, 4, 1, 2, 3).reshape(cb * mr, ci, kh, kw))


def conv2d_nchw_rows_python(data: np.ndarray, kernel: np.ndarray, stride: IntPair, padding: Padding,
                            dilation: IntPair = 1, out_dtype: DTypeLike | None = None) -> np.ndarray:
    """numpy: NCHW ``data`` and a weight packed in rows (:func:`pack_rows_weight`) -> NCHW output."""
    return ref.conv2d_nchw_python(data, unpack_rows_weight(kernel), stride, padding, dilation, out_dtype)


def baseline_inputs(data: np.ndarray, kernel: np.ndarray) -> tuple[np.ndarray, ...]:
    """``(data, weight [CO, CI, KH, KW])`` of a weight packed in rows (the timing baseline's inputs)."""
    return data, unpack_rows_weight(kernel)
