"""``conv2d_NCHWc_winograd.x86``: Winograd F(m x m, 3 x 3) convolution on channel-blocked data.

The template's arguments are ``conv2d_NCHWc.x86``'s workload (``data [N, C, H, W]``, ``kernel
[O, C, 3, 3]``, strides, padding, dilation, layouts, out dtype); only 3x3 kernels with stride
and dilation 1 are served.  The kernel's arguments are the blocked data ``[N, C/ic_bn, H, W,
ic_bn]`` and the transformed kernel ``U = G g G^T`` laid out ``[alpha, alpha, O/oc_bn, C/ic_bn,
ic_bn, oc_bn]`` (``alpha = m + 2``; ``reference.winograd_kernel_transform``: a graph computes it
once, at build time); the output is blocked ``[N, O/oc_bn, OH, OW, oc_bn]``, so the kernel can sit
between ``conv2d_NCHWc.x86`` kernels.

Stages: the padded input is cut into ``P = N * ceil(OH/m) * ceil(OW/m)`` overlapping
``alpha x alpha`` tiles, grouped ``tile_p`` at a time (the last group repeats tiles when
``tile_p`` does not divide ``P``); ``V = B^T d B`` per tile and input channel (rows, then
columns, vectorized over ``ic_bn``); a batched GEMM ``M[e] = U[e] V[e]`` over the ``alpha^2``
points (the bulk of the work: ``tile_p x oc_bn`` register tiles, vectorized over ``oc_bn``, the
points and output-channel blocks in parallel); ``Y = A^T M A`` per tile (rows, then columns),
then the tiles are written to the blocked output.  The transforms are written with their
constant coefficients (sums of the nonzero terms), selected by the unrolled point index.

Knobs: ``tile_ic`` and ``tile_oc`` (splits of C and O: ``ic_bn``, ``oc_bn``), ``tile_p`` (tiles
per register tile) and ``tile_m`` (m in {2, 4}).  FLOPs are the direct convolution's
(``2 N O C OH OW 9``) so that rates compare with direct kernels.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from tunecli.engine import te
from tunecli.engine.ir import expr as E
from tunecli.engine.ops import reference as ref
from tunecli.engine.ops.epilogue import create_group_schedule, output_through_epilogue
from tunecli.engine.ops.nn.pad import pad
from tunecli.engine.ops.strategy import OpCall, Strategy
from tunecli.engine.ops.x86.conv2d_nchwc import (
    declare_conv2d_NCHWc,
    fp32_lanes,
    largest_divisor,
    network_channel_block,
)
from tunecli.engine.schedule import Schedule
from tunecli.engine.task.space import ConfigSpace, OtherOptionEntity, SplitEntity
from tunecli.engine.task.workload_args import TaskArg
from tunecli.engine.te.window import IntPair, Padding, conv2d_output_shape, pair
from tunecli.errors import InstantiationError

TILE_SIZES = (2, 4)
REGISTER_TILES = (1, 2, 3, 4, 6, 7, 8, 12, 14)  # tiles per GEMM register tile
FALLBACK_ACCUMULATORS = 12  # accumulator vectors of the fallback register tile (16 ymm registers)
#: Uses per image of a transformed kernel element (one per tile) below which the fallback config
#: counts a Winograd GEMM as bound by streaming its kernel from memory rather than by its
#: multiply-adds, with 512-bit vectors and with narrower ones (:func:`tile_size_cost`).  A
#: network's transformed kernels do not stay in cache from one run to the next; with every core
#: multiplying, 512-bit units do about 32 uses' multiply-adds in the time one element streams in
#: from memory; narrower units do half the multiply-adds per cycle, and F(2x2)'s transforms,
#: 2.25x F(4x4)'s per output, weigh more beside them (benchmarks/README.md).
STREAMING_TILES = {512: 32, 256: 4}


def declare_conv2d_winograd(data: TaskArg, kernel: TaskArg, strides: IntPair, padding: Padding,
                            dilation: IntPair = (1, 1),
                            layout: str = "NCHW", out_layout: str = "NCHW",
                            out_dtype: str = "float32") -> OpCall:
    """The workload (``conv2d_NCHWc.x86``'s): logical ``data [N, C, H, W]``, ``kernel [O, C, 3, 3]``."""
    call = declare_conv2d_NCHWc(data, kernel, strides, padding, dilation, layout, out_layout, out_dtype)
    check_winograd_workload(call.inputs[1].shape, strides, dilation)
    return call


def check_winograd_workload(kernel_shape: Sequence[int], strides: IntPair, dilation: IntPair) -> None:
    """InstantiationError unless the kernel is 3x3 with stride 1 and dilation 1."""
    if tuple(kernel_shape[2:4]) != (3, 3) or pair(strides, "strides") != (1, 1) \
            or pair(dilation, "dilation") != (1, 1):
        raise InstantiationError(f"conv2d_NCHWc_winograd.x86: only 3x3 kernels with stride 1 and dilation 1, "
                                 f"got kernel {tuple(kernel_shape)}, strides {strides}, dilation {dilation}")


def define_winograd_space(cfg: ConfigSpace, channels: int, filters: int, out_hw: tuple[int, int],
                          network_blocks: bool = False) -> None:
    """Define the knobs (see the module docstring); a fallback config gets :func:`fallback_config`'s
    (``network_blocks``: a network layer's, True; a kernel writing its own blocks, False).

    ``ic_bn`` and ``oc_bn`` are whole vectors (multiples of the target's float32 lanes) where the
    channel count allows it: narrower blocks leave the vector units idle in every stage.
    """
    lanes = fp32_lanes()
    cfg.define_split("tile_ic", channels, num_outputs=2, filter=_whole_vectors(channels, lanes))
    cfg.define_split("tile_oc", filters, num_outputs=2, filter=_whole_vectors(filters, lanes))
    cfg.define_knob("tile_p", list(REGISTER_TILES))
    cfg.define_knob("tile_m", list(TILE_SIZES))
    if cfg.is_fallback:
        fallback_config(cfg, channels, filters, out_hw, network_blocks)


def _whole_vectors(extent: int, lanes: int) -> Callable[[SplitEntity], bool]:
    """A split filter keeping inner factors that are multiples of ``lanes`` (all when ``extent`` is
    not)."""
    if extent % lanes:
        return lambda split: True
    return lambda split: split.size[-1] % lanes == 0


def fallback_config(cfg: ConfigSpace, channels: int, filters: int, out_hw: tuple[int, int],
                    network_blocks: bool = False) -> None:
    """``oc_bn`` two vectors wide, ``ic_bn`` one; with ``network_blocks`` the block a fallback
    producer writes for ``ic_bn`` (``conv2d_nchwc.network_channel_block``) and, with 32 vector
    registers (16 lanes), the one its consumers read for ``oc_bn``, so that no layout transform lies
    between fallback neighbours (on narrower targets one follows); the tile size m of
    :func:`fallback_tile_size`; the register tile of at most :data:`FALLBACK_ACCUMULATORS` vectors
    with the least padded work (:func:`padded_work`)."""
    lanes = fp32_lanes()
    oc_bn = largest_divisor(filters, 2 * lanes)
    ic_bn = largest_divisor(channels, lanes)
    if network_blocks:
        oc_bn = network_channel_block(filters, lanes) if lanes >= 16 else oc_bn
        ic_bn = network_channel_block(channels, lanes)
    vectors = -(-oc_bn // lanes)
    m = fallback_tile_size(out_hw, lanes)
    tiles = tile_count(out_hw, m)
    fitting = [p for p in REGISTER_TILES if p * vectors <= FALLBACK_ACCUMULATORS] or [1]
    cfg["tile_ic"] = SplitEntity([channels // ic_bn, ic_bn])
    cfg["tile_oc"] = SplitEntity([filters // oc_bn, oc_bn])
    cfg["tile_p"] = OtherOptionEntity(min(fitting, key=lambda p: (padded_work(tiles, p), -p)))
    cfg["tile_m"] = OtherOptionEntity(m)


def streaming_tiles(lanes: int) -> int:
    """:data:`STREAMING_TILES` for vectors of ``lanes`` float32 (the 512-bit value from 16 lanes up)."""
    return STREAMING_TILES[512] if lanes >= 16 else STREAMING_TILES[256]


def tile_size_cost(out_hw: tuple[int, int], m: int, lanes: int) -> int:
    """A roofline estimate of F(m x m, 3 x 3)'s GEMM time on an image per pair of input and output
    channels, in multiply-adds: each of its ``(m + 2)^2`` transformed kernel elements takes the
    longer of its uses (one per tile) and its streaming from memory (:func:`streaming_tiles` uses)."""
    return (m + 2) ** 2 * max(tile_count(out_hw, m), streaming_tiles(lanes))


def fallback_tile_size(out_hw: tuple[int, int], lanes: int) -> int:
    """The fallback's m: the one of :data:`TILE_SIZES` of least :func:`tile_size_cost`, the larger
    (fewer multiply-adds) on a tie.  F(4x4)'s kernel is 2.25x F(2x2)'s and used by about a quarter
    the tiles, so small images (ResNet's 7x7 and 14x14 layers with 512-bit vectors) take F(2x2)."""
    return min(sorted(TILE_SIZES, reverse=True), key=lambda m: tile_size_cost(out_hw, m, lanes))


def tile_count(out_hw: tuple[int, int], m: int) -> int:
    """Output tiles of an image (batch 1) for tile size ``m``."""
    return -(-out_hw[0] // m) * -(-out_hw[1] // m)


def padded_work(tiles: int, tile_p: int) -> float:
    """A fallback heuristic: tiles computed (``tiles`` rounded up to ``tile_p``) times
    ``1 + 1/tile_p``, a register tile's fixed cost (its kernel loads, its stores) in tiles."""
    return -(-tiles // tile_p) * tile_p * (1 + 1 / tile_p)


def pack_conv2d_winograd(cfg: ConfigSpace, call: OpCall, block_data: bool = True) -> OpCall:
    """The kernel's inputs: blocked ``data`` (or, without ``block_data``, the NCHW data) and the
    transformed, blocked ``kernel`` for ``cfg``."""
    data, kernel = call.inputs
    n, ic, ih, iw = data.shape
    oc = kernel.shape[0]
    oh, ow, _ = conv2d_output_shape((ih, iw), (3, 3), call.attrs["stride"], call.attrs["padding"],
                                    call.attrs["dilation"])
    define_winograd_space(cfg, ic, oc, (oh, ow), network_blocks=block_data)
    ic_bn, oc_bn, alpha = cfg["tile_ic"].size[-1], cfg["tile_oc"].size[-1], cfg["tile_m"].val + 2
    if block_data:
        data = te.placeholder((n, ic // ic_bn, ih, iw, ic_bn), dtype=data.dtype, name="data")
    transformed = te.placeholder((alpha, alpha, oc // oc_bn, ic // ic_bn, ic_bn, oc_bn), dtype=kernel.dtype,
                                 name="kernel")
    return OpCall((data, transformed), call.attrs)


def combine(coefficients: np.ndarray, row: E.Expr, term: Callable[[int], E.Expr], dtype: str) -> E.Expr:
    """``sum_k coefficients[row, k] * term(k)`` with the nonzero coefficients written as constants,
    one expression per row selected by ``row`` (an index that unrolling makes constant)."""
    rows = []
    for coefs in coefficients:
        expr = None
        for k, c in sorted(enumerate(coefs), key=lambda kc: kc[1] < 0):  # positive terms first
            if c == 0:
                continue
            if expr is None:
                expr = term(k) if c == 1 else E.const(float(c), dtype) * term(k)
            elif c in (1, -1):
                expr = expr + term(k) if c == 1 else expr - term(k)
            else:
                expr = expr + E.const(float(c), dtype) * term(k)
        rows.append(expr if expr is not None else E.const(0.0, dtype))
    result = rows[-1]
    for index in range(len(rows) - 2, -1, -1):
        result = te.if_then_else(row == index, rows[index], result)
    return result


def kernel_transform_stage(kernel: te.Tensor, m: int, ic_bn: int, oc_bn: int) -> te.Tensor:
    """``G g G^T`` of an OIHW kernel as a stage, in the layout of the template's kernel argument."""
    _, _, g = ref.winograd_matrices(m)
    oc, ic = kernel.shape[:2]
    alpha = m + 2
    dtype = kernel.dtype

    rows = te.compute((alpha, 3, oc, ic),
                      lambda e1, j, o, c: combine(g, e1, lambda i: kernel[o, c, i, j], dtype),
                      name="winograd_kernel_rows", tag="injective,winograd_kernel_transform")
    return te.compute((alpha, alpha, oc // oc_bn, ic // ic_bn, ic_bn, oc_bn),
                      lambda e1, e2, ko, cb, ci, ki: combine(
                          g, e2, lambda j: rows[e1, j, ko * oc_bn + ki, cb * ic_bn + ci], dtype),
                      name="winograd_kernel", tag="injective,winograd_kernel_transform")


def conv2d_winograd_compute(cfg: ConfigSpace, data: te.Tensor, kernel: te.Tensor, stride: IntPair,
                            padding: Padding, dilation: IntPair, layout: str, out_layout: str,
                            out_dtype: str, network_blocks: bool = False) -> te.Tensor:
    """The stages of the module docstring; 4-D data and an OIHW kernel are blocked and transformed
    by stages first (the fallback's blocks a network layer's with ``network_blocks``)."""
    if len(data.shape) == 4:
        n, c, h, w = data.shape
        filters = kernel.shape[0] if len(kernel.shape) == 4 else kernel.shape[2] * kernel.shape[5]
        if len(kernel.shape) == 4:
            check_winograd_workload(kernel.shape, stride, dilation)
        out_hw = conv2d_output_shape((h, w), (3, 3), stride, padding, dilation)[:2]
        define_winograd_space(cfg, c, filters, out_hw, network_blocks)
        ic_bn, oc_bn = cfg["tile_ic"].size[-1], cfg["tile_oc"].size[-1]
        data = te.compute((n, c // ic_bn, h, w, ic_bn), lambda b, cc, y, x, v: data[b, cc * ic_bn + v, y, x],
                          name="data_vec", tag="injective,layout_transform")
        if len(kernel.shape) == 4:
            kernel = kernel_transform_stage(kernel, cfg["tile_m"].val, ic_bn, oc_bn)
    n, cb, h, w, ic_bn = data.shape
    alpha, _, kb, _, _, oc_bn = kernel.shape
    check_winograd_workload((0, 0, 3, 3), stride, dilation)
    oh, ow, (pt, pl, _, _) = conv2d_output_shape((h, w), (3, 3), stride, padding, dilation)
    define_winograd_space(cfg, cb * ic_bn, kb * oc_bn, (oh, ow), network_blocks)
    m = alpha - 2
    at, bt, _ = ref.winograd_matrices(m)
    cfg.add_flop(2 * n * kb * oc_bn * oh * ow * cb * ic_bn * 9)
    nh, nw = -(-oh // m), -(-ow // m)
    tiles = n * nh * nw
    bp = cfg["tile_p"].val
    groups = -(-tiles // bp)
    out_dtype = out_dtype or data.dtype
    padded = pad(data, [0, 0, pt, pl, 0], [0, 0, nh * m + 2 - h - pt, nw * m + 2 - w - pl, 0],
                 name="data_pad")

    def tile_origin(po: E.Expr, pi: E.Expr) -> tuple[E.Expr, E.Expr, E.Expr]:
        p = po * bp + pi
        if groups * bp != tiles:
            p = te.indexmod(p, tiles)
        return te.indexdiv(p, nh * nw), te.indexmod(te.indexdiv(p, nw), nh) * m, te.indexmod(p, nw) * m

    def input_rows(e1: E.Expr, j: E.Expr, po: E.Expr, c: E.Expr, pi: E.Expr, ci: E.Expr) -> E.Expr:
        b, y, x = tile_origin(po, pi)
        return combine(bt, e1, lambda i: padded[b, c, y + i, x + j, ci], data.dtype)

    shape_v = (alpha, alpha, groups, cb, bp, ic_bn)
    rows = te.compute(shape_v, input_rows, name="winograd_input_rows")
    v = te.compute(shape_v, lambda e1, e2, po, c, pi, ci: combine(
        bt, e2, lambda j: rows[e1, j, po, c, pi, ci], data.dtype), name="winograd_input")
    rc = te.reduce_axis((0, cb), name="rc")
    rci = te.reduce_axis((0, ic_bn), name="rci")
    gemm = te.compute(
        (alpha, alpha, kb, groups, bp, oc_bn),
        lambda e1, e2, k, po, pi, ki: te.sum(
            v[e1, e2, po, rc, pi, rci].astype(out_dtype) * kernel[e1, e2, k, rc, rci, ki].astype(out_dtype),
            axis=[rc, rci]),
        name="winograd_gemm", tag="winograd_gemm")
    out_rows = te.compute((m, alpha, kb, groups, bp, oc_bn), lambda a, e2, k, po, pi, ki: combine(
        at, a, lambda e1: gemm[e1, e2, k, po, pi, ki], out_dtype), name="winograd_output_rows")
    out_tiles = te.compute((kb, groups, bp, m, m, oc_bn), lambda k, po, pi, a, b, ki: combine(
        at, b, lambda e2: out_rows[a, e2, k, po, pi, ki], out_dtype), name="winograd_output")

    def gather(b: E.Expr, k: E.Expr, y: E.Expr, x: E.Expr, ki: E.Expr) -> E.Expr:
        p = b * (nh * nw) + te.indexdiv(y, m) * nw + te.indexdiv(x, m)
        return out_tiles[k, te.indexdiv(p, bp), te.indexmod(p, bp), te.indexmod(y, m), te.indexmod(x, m), ki]

    return te.compute((n, kb, oh, ow, oc_bn), gather, name="conv2d_winograd_NCHWc",
                      tag="conv2d_winograd_NCHWc")


def conv2d_NCHWc_winograd_compute(cfg: ConfigSpace, data: te.Tensor, kernel: te.Tensor, stride: IntPair,
                                  padding: Padding, dilation: IntPair, layout: str, out_layout: str,
                                  out_dtype: str) -> te.Tensor:
    """``conv2d_NCHWc_winograd.x86``'s compute: :func:`conv2d_winograd_compute` of a network layer."""
    return conv2d_winograd_compute(cfg, data, kernel, stride, padding, dilation, layout, out_layout,
                                   out_dtype, network_blocks=True)


def schedule_conv2d_winograd(cfg: ConfigSpace, outs: Sequence[te.Tensor],
                             epilogue: te.Tensor | None = None) -> Schedule:
    """Schedule ``conv2d_winograd_compute``'s stages; an epilogue (blocked, e.g. bias + relu) reads the
    output tiles in place of the gather stage."""
    (conv,) = outs
    s = create_group_schedule(outs, epilogue)
    out = output_through_epilogue(s, outs, epilogue)
    out_tiles = conv.op.input_tensors[0]
    out_rows = out_tiles.op.input_tensors[0]
    gemm = out_rows.op.input_tensors[0]
    v, kernel = gemm.op.input_tensors
    rows = v.op.input_tensors[0]
    padded = rows.op.input_tensors[0]
    _schedule_inputs(s, padded, kernel)

    # V = B^T d B: one tile and channel block per iteration, its alpha x alpha points unrolled
    e1, e2, po, c, pi, ci = s[v].op.axis
    s[v].reorder(po, c, pi, e1, e2, ci)
    _schedule_transform(s, v, rows, (po, c), pi, (e1, e2), ci)

    # M[e] = U[e] V[e]: tile_p x oc_bn register tiles, the channels reduced inside them
    acc = s.cache_write(gemm, "local")
    e1, e2, k, po, pi, ki = s[gemm].op.axis
    s[gemm].parallel(s[gemm].fuse(e1, e2, k))
    s[gemm].unroll(pi)
    s[gemm].vectorize(ki)
    s[acc].compute_at(s[gemm], po)
    *_, pi, ki = s[acc].op.axis
    rc, rci = s[acc].op.reduce_axis
    s[acc].reorder(rc, rci, pi, ki)
    s[acc].unroll(pi)
    s[acc].vectorize(ki)

    # Y = A^T M A per tile, then the tiles written to the output
    k, po, pi, a, b, ki = s[out_tiles].op.axis
    _schedule_transform(s, out_tiles, out_rows, (k, po), pi, (a, b), ki)

    if len(out.shape) == 4:  # an NCHW result (``conv2d_nchw_winograd.x86``): channel blocks of NCHW
        b, c, y, x = s[out].op.axis
        k, ki = s[out].split(c, factor=conv.shape[-1])
        s[out].reorder(b, k, y, x, ki)
    else:
        b, k, y, x, ki = s[out].op.axis
    s[out].parallel(s[out].fuse(b, k, y))
    s[out].vectorize(ki)
    return s


def _schedule_transform(s: Schedule, stage: te.Tensor, rows: te.Tensor, outer: Sequence[te.IterVar],
                        tile: te.IterVar, points: Sequence[te.IterVar], block: te.IterVar) -> None:
    """A two-pass Winograd transform (``B^T d B`` or ``A^T M A``): ``stage``'s ``outer`` loops fused
    and parallel, the ``points`` of each tile unrolled and the channel ``block`` vectorized; its
    first pass ``rows`` computed per ``tile``, its two leading axes unrolled, its last vectorized."""
    s[stage].parallel(s[stage].fuse(*outer))
    for axis in points:
        s[stage].unroll(axis)
    s[stage].vectorize(block)
    s[rows].compute_at(s[stage], tile)
    r1, r2, *_, lanes = s[rows].op.axis
    s[rows].unroll(r1)
    s[rows].unroll(r2)
    s[rows].vectorize(lanes)


def _schedule_inputs(s: Schedule, padded: te.Tensor, kernel: te.Tensor) -> None:
    """Parallel padding (vectorized over the channel block) and, in a graph, layout stages."""
    b, c, y, _, v = s[padded].op.axis
    s[padded].parallel(s[padded].fuse(b, c, y))
    s[padded].vectorize(v)
    stages = [kernel, *kernel.op.input_tensors]
    for stage in padded.op.input_tensors:  # NCHW data blocked by a stage: read through the padding
        if "layout_transform" in getattr(stage.op, "tag", ""):
            s[stage].compute_inline()
        else:
            stages.append(stage)
    for stage in stages:
        if isinstance(stage.op, te.ComputeOp):
            axes = s[stage].op.axis
            s[stage].parallel(s[stage].fuse(*axes[:2]))


CONV2D_NCHWC_WINOGRAD = Strategy(
    op="conv2d_NCHWc_winograd", target_key="cpu", name="conv2d_NCHWc_winograd.x86",
    declare=declare_conv2d_winograd, compute=conv2d_NCHWc_winograd_compute, schedule=schedule_conv2d_winograd,
    reference=ref.conv2d_winograd_NCHWc_python, outputs=("out",), pack=pack_conv2d_winograd, plevel=15,
    summary="Winograd F(m x m, 3 x 3), 3x3 stride 1 only; NCHW[ic_bn]c data, kernel transformed "
            "`[alpha, alpha, O/oc_bn, C/ic_bn, ic_bn, oc_bn]`, NCHW[oc_bn]c output")
