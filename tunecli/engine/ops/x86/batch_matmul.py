"""TVM's ``batch_matmul.x86``: its workload and knobs, scheduled as register-tiled blocks.

Template arguments are TVM's workload: ``tensor_a, tensor_b, out_shape, out_dtype, transpose_a,
transpose_b`` with ``tensor_a [B, M, K]`` (``[B, K, M]`` with ``transpose_a``) and ``tensor_b
[B, N, K]`` (TVM's default ``transpose_b=True``; ``[B, K, N]`` otherwise) as ``("TENSOR", shape,
dtype)``; a batch of 1 on either side broadcasts.  Kernel arguments: the two tensors, then the
output ``[B, M, N]``.

Knobs, in TVM's order (so a TVM record's config index denotes the same config): ``tile_y``
(split of M in two), ``tile_x`` (split of N in two), ``tile_k`` (split of K in two).  The output
is cut into ``tile_y x tile_x`` blocks, one parallel task per (batch, block); each block is
computed as register tiles (``register_tile``: a divisor of the block's width a whole number
of vectors wide, and as many rows as the accumulator registers allow) accumulated over K with
``tile_k``'s inner factor unrolled, rows unrolled and columns vectorized.  With ``transpose_b``
the operand ``tensor_b`` is first packed into ``[B, N / bn, K, bn]`` panels (``bn``: the block
width) so every tile reads contiguous vectors; ``[B, K, N]`` operands are read in place.

A fallback config (no record) is one register tile per block, sized to the target's vectors as
``dense.x86``'s (``gemm.fallback_gemm_tile``), and ``tile_k``'s inner factor the largest divisor
of K up to 16.  For a ragged M or N (``gemm.ragged_rows`` / ``ragged_columns``: ViT's 197
tokens) that tile need not divide them: the product is computed over whole tiles
(``gemm.padded``: padded rows read the last row of ``tensor_a``, ``tensor_b`` is packed in
padded panels, also when not transposed) and its first M x N are the result.
The knobs stay TVM's divisors; a tuned config's block of a ragged M (or all of a ragged N) is
computed in the register tiles that pad it least for their speed (``padded_tile_cost``), its last
rows and columns stored guarded.
"""

from __future__ import annotations

from collections.abc import Sequence

from tunecli.engine import te
from tunecli.engine.ops import baseline
from tunecli.engine.ops import reference as ref
from tunecli.engine.ops.epilogue import create_group_schedule
from tunecli.engine.ops.nn.batch_matmul import batch_matmul_pack
from tunecli.engine.ops.strategy import OpCall, Strategy
from tunecli.engine.ops.x86.conv2d_nchwc import fallback_register_tile, fp32_lanes, logical_tensors
from tunecli.engine.ops.x86.dense import out_dtype_for
from tunecli.engine.ops.x86.gemm import (
    MAX_KK,
    fallback_gemm_tile,
    padded,
    padded_extent,
    panel_output_and_accumulator,
    panel_widths,
    ragged_columns,
    ragged_rows,
    tile_rows,
    vector_register_count,
)
from tunecli.engine.schedule import Schedule
from tunecli.engine.task.factors import get_factors
from tunecli.engine.task.space import ConfigSpace, SplitEntity
from tunecli.engine.task.workload_args import TaskArg
from tunecli.engine.task.workload_flop import batch_matmul_flop
from tunecli.errors import InstantiationError

#: Widest register tile, in vectors of the target.
MAX_TILE_VECTORS = 4
#: Independent accumulators a register tile needs to hide the multiply-add latency (two FMA units
#: of four cycles).
MIN_ACCUMULATORS = 8


def batch_matmul_dims(a_shape: Sequence[int], b_shape: Sequence[int], transpose_a: bool,
                      transpose_b: bool) -> tuple[int, int, int, int]:
    """``(B, M, N, K)`` of a batch matmul of operands shaped ``a_shape`` and ``b_shape``.

    Raises
    ------
    InstantiationError
        When the operands are not 3-D, their reduction sizes differ or their batches do not
        broadcast.
    """
    if len(a_shape) != 3 or len(b_shape) != 3:
        raise InstantiationError(f"batch_matmul.x86: 3-D tensors expected, got {tuple(a_shape)} and "
                                 f"{tuple(b_shape)}")
    ab, a1, a2 = (int(d) for d in a_shape)
    bb, b1, b2 = (int(d) for d in b_shape)
    m, ka = (a2, a1) if transpose_a else (a1, a2)
    n, kb = (b1, b2) if transpose_b else (b2, b1)
    if ka != kb or (ab != bb and 1 not in (ab, bb)):
        raise InstantiationError(
            f"batch_matmul.x86: tensor_a {tuple(a_shape)} and tensor_b {tuple(b_shape)} do not multiply "
            f"(transpose_a={transpose_a}, transpose_b={transpose_b})")
    return max(ab, bb), m, n, ka


def declare_batch_matmul(tensor_a: TaskArg, tensor_b: TaskArg, out_shape: Sequence[int] | None = None,
                         out_dtype: str | None = None,
                         transpose_a: bool = False, transpose_b: bool = True) -> OpCall:
    """TVM's workload: the two operands; ``out_shape`` is checked when given, ``out_dtype``
    defaults to the operands' (int32 for 8/16-bit integers)."""
    a, b = logical_tensors(tensor_a, tensor_b)
    dims = batch_matmul_dims(a.shape, b.shape, bool(transpose_a), bool(transpose_b))
    if out_shape is not None and tuple(int(d) for d in out_shape) != dims[:3]:
        raise InstantiationError(f"batch_matmul.x86: out_shape {tuple(out_shape)} is not the product's "
                                 f"{dims[:3]}")
    out_dtype = out_dtype_for(a.dtype) if out_dtype is None else str(out_dtype)
    attrs = {"out_dtype": out_dtype, "trans_x": bool(transpose_a), "trans_y": bool(transpose_b)}
    return OpCall((a, b), attrs)


def define_batch_matmul_space(cfg: ConfigSpace, m: int, n: int, k: int) -> None:
    """TVM's knobs ``tile_y``, ``tile_x``, ``tile_k``; a fallback config gets one register tile
    per block (see the module docstring)."""
    cfg.define_split("tile_y", m, num_outputs=2)
    cfg.define_split("tile_x", n, num_outputs=2)
    cfg.define_split("tile_k", k, num_outputs=2)
    if cfg.is_fallback:
        lanes = fp32_lanes()
        panels = panel_widths(n, MAX_TILE_VECTORS * lanes)
        mr, nr = fallback_gemm_tile(m, panels, lanes, fallback_register_tile() - 2, vector_register_count())
        kk = max(f for f in get_factors(k) if f <= MAX_KK)
        cfg["tile_y"] = SplitEntity([-(-m // mr), mr])
        cfg["tile_x"] = SplitEntity([-(-n // nr), nr])
        cfg["tile_k"] = SplitEntity([k // kk, kk])


def batch_matmul_x86_compute(cfg: ConfigSpace, x: te.Tensor, y: te.Tensor, out_dtype: str,
                             trans_x: bool = False,
                             trans_y: bool = True) -> te.Tensor:
    """Define the knobs, then the product (``y`` packed in ``tile_x``-wide panels when transposed)."""
    b, m, n, k = batch_matmul_dims(x.shape, y.shape, trans_x, trans_y)
    define_batch_matmul_space(cfg, m, n, k)
    cfg.add_flop(2 * b * m * n * k)
    rows, width = padded_blocks(cfg, m, n)
    return batch_matmul_pack(x, y, width, out_dtype, trans_x, trans_y, rows=rows)


def padded_blocks(cfg: ConfigSpace, m: int, n: int) -> tuple[int, int]:
    """The rows and the panel width the product is computed over: whole ``tile_y`` blocks, and
    ``tile_x``'s panels; a block that is all of a ragged M or N (TVM's divisors of 197 give
    blocks of 1 or 197) is padded to whole register tiles (``register_tile``)."""
    by, bx = cfg["tile_y"].size[-1], cfg["tile_x"].size[-1]
    rows, cols = block_register_tile(cfg, m, n)
    height = padded_extent(m, rows) if by == m else padded(m, cfg["tile_y"])
    return height, (padded_extent(n, cols) if bx == n else bx)


def block_register_tile(cfg: ConfigSpace, m: int, n: int) -> tuple[int, int]:
    """``register_tile`` of the config's blocks on the current target (a block that is all of a
    ragged N may take whole vectors past it)."""
    return register_tile(cfg["tile_y"].size[-1], cfg["tile_x"].size[-1], fp32_lanes(),
                         fallback_register_tile() - 2, whole_x=cfg["tile_x"].size[-1] == n)


def register_tile(block_y: int, block_x: int, lanes: int, registers: int,
                  whole_x: bool = False) -> tuple[int, int]:
    """The register tile ``(rows, columns)`` a ``block_y x block_x`` block is computed in.

    Columns: the widest divisor of ``block_x`` of at most ``MAX_TILE_VECTORS`` vectors, whole
    vectors preferred (with ``whole_x``, the block being all of N, also the whole numbers of
    vectors of ``gemm.panel_widths`` when it is ragged: the product is padded); rows: the most of
    ``gemm.tile_rows`` (divisors of ``block_y`` up to ``MAX_MR``, any count up to it for a ragged
    ``block_y``) whose accumulators fit in ``registers`` vectors (at least one row).

    A block whose tiles are padded (a ragged ``block_y``, or a ragged ``block_x`` that is all of N:
    ViT's 197 x 197 attention scores) takes instead the tile of least ``padded_tile_cost``: the
    widest tile would compute 256 columns of 197.
    """
    widest = MAX_TILE_VECTORS * lanes
    ragged_x = whole_x and ragged_columns(block_x, widest)
    widths = panel_widths(block_x, widest) if whole_x else [w for w in get_factors(block_x) if w <= widest]
    if ragged_rows(block_y) or ragged_x:
        whole = [w for w in widths if w % lanes == 0] or widths
        tiles = [(r, w) for w in whole for r in tile_rows(block_y) if r * -(-w // lanes) <= registers]
        return min(tiles, key=lambda t: (padded_tile_cost(block_y, block_x, *t, lanes), -t[1], -t[0]))
    cols = max(widths, key=lambda w: (w % lanes == 0, w))
    vectors = -(-cols // lanes)
    rows = max(r for r in tile_rows(block_y) if r == 1 or r * vectors <= registers)
    return rows, cols


def padded_tile_cost(block_y: int, block_x: int, rows: int, cols: int, lanes: int) -> float:
    """Relative time of a ``block_y x block_x`` block computed in ``rows x cols`` register tiles
    padded to whole tiles: the padded area, times how far one step of the reduction falls short of
    one multiply-add per accumulator per cycle slot (its ``rows`` broadcasts and ``cols / lanes``
    loads, or fewer accumulators than ``MIN_ACCUMULATORS`` to hide the multiply-add latency)."""
    vectors = -(-cols // lanes)
    acc = rows * vectors
    slowdown = max(1.0, (rows + vectors) / acc, MIN_ACCUMULATORS / acc)
    return padded_extent(block_y, rows) * padded_extent(block_x, vectors * lanes) * slowdown


def schedule_batch_matmul_x86(cfg: ConfigSpace, outs: Sequence[te.Tensor],
                              epilogue: te.Tensor | None = None) -> Schedule:
    """Parallel over (batch, block); each block in register tiles; the packing parallel over panels."""
    s = create_group_schedule(outs, epilogue)
    O, CC, C = panel_output_and_accumulator(s, outs, epilogue)
    packing = [t for t in C.op.input_tensors if "layout_transform" in getattr(t.op, "tag", "")]
    b, y, x = s[O].op.axis
    yo, yi = cfg["tile_y"].apply(s, O, y)
    xo, xi = cfg["tile_x"].apply(s, O, x)
    _, m, n = (int(d) for d in O.shape)
    rows, cols = block_register_tile(cfg, m, n)
    yio, yii = s[O].split(yi, rows)
    xio, xii = s[O].split(xi, cols)
    s[O].reorder(b, yo, xo, yio, xio, yii, xii)
    s[O].parallel(s[O].fuse(b, yo, xo))
    tile = s[O].fuse(yio, xio)
    s[O].unroll(yii)
    s[O].vectorize(xii)

    s[CC].compute_at(s[O], tile)
    _, cy, cx = s[CC].op.axis
    (kaxis,) = s[CC].op.reduce_axis
    ko, ki = cfg["tile_k"].apply(s, CC, kaxis)
    s[CC].reorder(ko, ki, cy, cx)
    if cfg["tile_k"].size[-1] <= MAX_KK:
        s[CC].unroll(ki)
    s[CC].unroll(cy)
    s[CC].vectorize(cx)

    for packed in packing:  # [B, N / bn, K, bn] panels of a transposed tensor_b
        pb, pz, _, pv = s[packed].op.axis
        s[packed].parallel(s[packed].fuse(pb, pz))
        s[packed].vectorize(pv)
    return s


BATCH_MATMUL_X86 = Strategy(
    op="batch_matmul", target_key="cpu", name="batch_matmul.x86", declare=declare_batch_matmul,
    compute=batch_matmul_x86_compute, schedule=schedule_batch_matmul_x86, reference=ref.batch_matmul,
    outputs=("out",), summary="TVM's workload and knobs; `tensor_b` transposed by default, both forms served",
    baseline=baseline.BATCH_MATMUL, workload_flop=batch_matmul_flop)
