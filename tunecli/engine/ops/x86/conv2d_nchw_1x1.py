"""``conv2d_nchw_1x1.x86``: a 1x1 NCHW convolution as a GEMM over pixels (kernel jobs).

Per image, NCHW data is a ``[CI, H*W]`` matrix and the NCHW result a ``[CO, OH*OW]`` one, so a 1x1
convolution with stride 1 and no padding is ``out = weight @ data``: no packing of the data and
no unpacking of the result.  With a stride, a stage copies the strided pixels into a
``[CI, OH*OW]`` matrix, a tile's rows at a time inside the parallel loop, then the same GEMM.
The output is tiled into register tiles of ``mr`` output channels by a run of pixels,
vectorized: ``columns`` of ``lines`` rows, and where the columns are whole rows the ``lines x OW``
pixels are one contiguous run of the image (7x7 pixels as 49 lanes, not 7 rows of 7).  The input
channels are reduced inside the tile: per input channel, one load of the tile's pixels and one
broadcast weight per channel row.

Template arguments are ``conv2d_nchw.x86``'s (``N, H, W, CI, CO, KH, KW, stride, padding,
dilation, dtype``); only 1x1 kernels with no padding and dilation 1 (any stride), float32.
Kernel arguments: ``data [N, CI, H, W]``, the weight packed ``[CO/mr, CI, mr]`` (prepared once, as
``relay.build`` prepares a constant weight: ``conv2d_nchw_blocked.weight_for_kernel``) and
``out [N, CO, OH, OW]``.

Knobs: ``tile_co`` (split of CO, inner ``mr``: the tile's channel rows), ``tile_oh`` (split of OH,
inner ``lines``: 1, or whole rows of at most :data:`MAX_COLUMNS` pixels) and ``tile_ow`` (split of
OW, inner ``columns``, at most :data:`MAX_COLUMNS`).  The fallback takes :func:`fallback_pixels`'
pixels and as many channel rows as the target's vector registers hold beside them
(``conv2d_nchw_rows.fallback_rows``).
"""

from __future__ import annotations

from collections.abc import Sequence

from tunecli.engine import te
from tunecli.engine.ops import baseline
from tunecli.engine.ops.epilogue import create_group_schedule, output_and_accumulator
from tunecli.engine.ops.strategy import OpCall, Strategy
from tunecli.engine.ops.x86.conv2d import declare_conv2d_nchw
from tunecli.engine.ops.x86.conv2d_nchw_rows import (
    MAX_COLUMNS,
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
from tunecli.engine.schedule import Schedule, Stage
from tunecli.engine.task.space import ConfigSpace
from tunecli.engine.te.window import IntPair, Padding, conv2d_output_shape, get_pad_tuple, pair
from tunecli.errors import InstantiationError

GEMM_1X1 = "conv2d_nchw_1x1.x86"
STRIDED_TAG = "injective,strided_pixels"
FILL = 7 / 8  # share of a vector's lanes a tile of pixels must fill (fills_vectors)
#: Fewest row blocks (batch x output rows / tile rows) whose parallel loop copies its own strided pixels.
ROW_BLOCKS = 8


def check_1x1_workload(kernel_hw: Sequence[int], stride: IntPair, padding: Padding,
                       dilation: IntPair) -> None:
    """InstantiationError unless the kernel is 1x1 with no padding and dilation 1 (any stride)."""
    unit = pair(dilation, "dilation") == (1, 1) and min(pair(stride, "stride")) >= 1
    if tuple(kernel_hw) != (1, 1) or not unit or any(get_pad_tuple(padding, (1, 1))):
        raise InstantiationError(f"{GEMM_1X1}: only 1x1 kernels with no padding and dilation 1, "
                                 f"got kernel {tuple(kernel_hw)}, stride {stride}, padding {padding}, "
                                 f"dilation {dilation}")


def declare_conv2d_nchw_1x1(N: int, H: int, W: int, CI: int, CO: int, KH: int, KW: int, stride: IntPair,
                            padding: Padding, dilation: IntPair = 1, dtype: str = "float32") -> OpCall:
    """``conv2d_nchw.x86``'s placeholders; only the 1x1 convolutions of the module docstring."""
    check_1x1_workload((KH, KW), stride, padding, dilation)
    if dtype != "float32":
        raise InstantiationError(f"{GEMM_1X1}: float32 only, got {dtype}")
    return declare_conv2d_nchw(N, H, W, CI, CO, KH, KW, stride, padding, dilation, dtype)


def define_1x1_space(cfg: ConfigSpace, channels_out: int, height: int, width: int) -> None:
    """The knobs of the module docstring; a fallback config gets :func:`fallback_pixels`' pixels and
    :func:`fallback_rows`' channel rows."""
    define_row_tiles(cfg, channels_out, height, width,
                     lines=lambda s: s.size[-1] == 1 or s.size[-1] * width <= MAX_COLUMNS)
    if cfg.is_fallback:
        lanes = fp32_lanes()
        lines, columns = fallback_pixels(height, width, lanes)
        rows = fallback_rows(channels_out, vector_ops(lines * columns, lanes), fallback_register_tile())
        set_row_tiles(cfg, channels_out, height, width, (rows, lines, columns))


def fallback_pixels(height: int, width: int, lanes: int) -> tuple[int, int]:
    """``(lines, columns)`` of the fallback tile's pixels: a divisor of the row within four vectors,
    or whole rows (a contiguous run of the image) where those fill the vectors better: the most
    pixels per vector instruction, then the most pixels.

    Parameters
    ----------
    height, width : int
        The output's rows and columns.
    lanes : int
        float32 lanes of a vector.

    Returns
    -------
    tuple of int
    """
    most = min(MAX_COLUMNS, 4 * lanes)
    candidates = [(1, largest_divisor(width, most))]
    candidates += [(lines, width) for lines in range(2, height + 1)
                   if height % lines == 0 and lines * width <= most]
    return max(candidates, key=lambda t: (t[0] * t[1] / vector_ops(t[0] * t[1], lanes), t[0] * t[1]))


def fills_vectors(height: int, width: int, lanes: int) -> bool:
    """Whether the fallback's pixels (:func:`fallback_pixels`) fill at least :data:`FILL` of the
    lanes of their vector instructions: where they do, the GEMM over pixels is faster than the
    blocked schedule with its NCHW write; where they do not (rows of 7 or 14 on 16 lanes), the idle
    lanes cost more than that write."""
    lines, columns = fallback_pixels(height, width, lanes)
    return lines * columns >= FILL * vector_ops(lines * columns, lanes) * lanes


def pack_conv2d_nchw_1x1(cfg: ConfigSpace, call: OpCall) -> OpCall:
    """The kernel's inputs: NCHW ``data`` and the ``[CO/mr, CI, mr]`` weight."""
    data, kernel = call.inputs
    oh, ow, _ = conv2d_output_shape(data.shape[2:], (1, 1), call.attrs["stride"], 0, 1)
    define_1x1_space(cfg, kernel.shape[0], oh, ow)
    mr = cfg["tile_co"].size[-1]
    packed = te.placeholder((kernel.shape[0] // mr, kernel.shape[1], mr), dtype=kernel.dtype, name="kernel")
    return OpCall((data, packed), call.attrs)


def conv2d_nchw_1x1_compute(cfg: ConfigSpace, data: te.Tensor, kernel: te.Tensor, stride: IntPair,
                            padding: Padding, dilation: IntPair, out_dtype: str) -> te.Tensor:
    """``out[b, c, y, x] = sum_i weight[c, i] * data[b, i, y * sh, x * sw]`` (strided pixels copied by a
    stage first); an OIHW kernel is packed by a stage, a 3-D one taken as packed."""
    n, ci, h, w = data.shape
    co = kernel.shape[0] if len(kernel.shape) == 4 else kernel.shape[0] * kernel.shape[2]
    check_1x1_workload(kernel.shape[2:4] if len(kernel.shape) == 4 else (1, 1), stride, padding, dilation)
    h, w, _ = conv2d_output_shape((h, w), (1, 1), stride, 0, 1)
    define_1x1_space(cfg, co, h, w)
    kernel = packed_weight(kernel, cfg["tile_co"].size[-1], GEMM_1X1, squeeze=True)
    mr = kernel.shape[2]
    cfg.add_flop(2 * n * co * h * w * ci)
    sh, sw = pair(stride, "stride")
    if (sh, sw) != (1, 1):
        original = data
        data = te.compute((n, ci, h, w), lambda b, i, y, x: original[b, i, y * sh, x * sw],
                          name="data_strided", tag=STRIDED_TAG)
    r = te.reduce_axis((0, ci), name="ci")
    return te.compute(
        (n, co, h, w),
        lambda b, c, y, x: te.sum(data[b, r, y, x].astype(out_dtype)
                                  * kernel[c // mr, r, c % mr].astype(out_dtype), axis=[r]),
        name="conv2d_nchw_1x1", tag="conv2d_nchw_1x1")


def schedule_conv2d_nchw_1x1(cfg: ConfigSpace, outs: Sequence[te.Tensor],
                             epilogue: te.Tensor | None = None) -> Schedule:
    """``mr x pixels`` register tiles, the input channels reduced inside them; batch, channel-row
    blocks and row blocks fused into one parallel loop; with a stride and at least
    :data:`ROW_BLOCKS` row blocks (batch included), batch and row blocks are the parallel loop, each
    iteration copying its rows' strided pixels (all input channels) before the channel-row blocks
    read them from L1, else the copy is a parallel stage before it; an epilogue (bias + relu)
    writes the tiles."""
    (conv,) = outs
    s = create_group_schedule(outs, epilogue)
    out, acc = output_and_accumulator(s, conv, epilogue)
    tile = tuple(cfg[k].size[-1] for k in ("tile_co", "tile_oh", "tile_ow"))
    whole_rows = tile[2] == conv.shape[3]
    strided = [t for t in conv.op.input_tensors if getattr(t.op, "tag", "") == STRIDED_TAG]
    rows_outer = bool(strided) and int(conv.shape[0]) * int(conv.shape[2]) // tile[1] >= ROW_BLOCKS
    outer, xo, yi, xi = tile_rows(s, conv, out, tile, rows_outer)
    for stage in strided:  # a scalar copy: strided vector loads are gathers
        if rows_outer:
            s[stage].compute_at(s[out], outer)
        else:
            b, i = s[stage].op.axis[:2]
            s[stage].parallel(s[stage].fuse(b, i))
    _vectorize_pixels(s[out], yi, xi, whole_rows)
    s[acc].compute_at(s[out], xo)
    b, c, y, x = s[acc].op.axis
    (r,) = s[acc].op.reduce_axis
    s[acc].reorder(b, r, c, y, x)
    s[acc].unroll(c)
    _vectorize_pixels(s[acc], y, x, whole_rows)
    return s


def _vectorize_pixels(stage: Stage, y: te.IterVar, x: te.IterVar, whole_rows: bool) -> None:
    """A tile's pixels as vectors: its whole rows fused into one contiguous run, else each row."""
    if whole_rows:
        stage.vectorize(stage.fuse(y, x))
    else:
        stage.unroll(y)
        stage.vectorize(x)


CONV2D_NCHW_1X1 = Strategy(
    op="conv2d_nchw_1x1", target_key="cpu", name=GEMM_1X1, declare=declare_conv2d_nchw_1x1,
    compute=conv2d_nchw_1x1_compute, schedule=schedule_conv2d_nchw_1x1, reference=conv2d_nchw_rows_python,
    outputs=("out",), pack=pack_conv2d_nchw_1x1,
    baseline=baseline.Baseline("im2col + matmul", baseline.conv2d_nchw, baseline_inputs),
    summary="`conv2d_nchw.x86`'s arguments, unpadded 1x1 only: a GEMM over pixels (strided ones copied "
            "first), NCHW data and output, the weight packed `[CO/mr, CI, mr]`; a kernel job's unpadded 1x1 "
            "`conv2d_nchw.x86` task runs as this on 512-bit-vector x86 targets where its pixels fill the "
            "vectors")
