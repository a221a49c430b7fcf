"""``conv2d_NCHWc.x86``: TVM's x86 convolution on channel-blocked data with a pre-packed kernel.

Template arguments are TVM's workload: ``data, kernel, strides, padding, dilation, layout,
out_layout, out_dtype`` with ``data [N, C, H, W]`` and ``kernel [O, C, KH, KW]`` tensors (given
as tensors or ``("TENSOR", shape, dtype)``), so TVM's records (its tophub packages among them)
and ours name the same tasks.  The kernel's arguments are the blocked tensors the config
chooses: ``data [N, C/ic_bn, H, W, ic_bn]``, ``kernel [O/oc_bn, C/ic_bn, KH, KW, ic_bn, oc_bn]``
and the output ``[N, O/oc_bn, OH, OW, oc_bn]``; the layout transforms happen outside the kernel
(a graph packs the weights once, at build time).

Knobs, in TVM's order (the config indices of TVM's logs decode to the same configs):
``tile_ic`` and ``tile_oc`` (splits of C and O, inner = ``ic_bn`` / ``oc_bn``), ``tile_ow`` (split
of OW, inner ``reg_n <= 64``: output columns per register tile), then ``unroll_kw`` (True/False)
or, for 1x1 kernels, ``tile_oh`` (1 or 2 output rows per register tile).  ``tile_ow`` uses the
``factors`` policy, the space of TVM's pre-tuned ``llvm_v0.04`` package (newer TVM sources
enumerate it with ``verbose``, which numbers the configs differently; a record's entities, not
its index, are what dispatch applies, so both apply here).

Schedules (TVM's ``conv2d_avx_common`` / ``conv2d_avx_1x1``): the output is tiled into
``reg_n x oc_bn`` (1x1: ``tile_oh x reg_n x oc_bn``) blocks accumulated in a local stage with
the reduction outside the block, ``oc_bn`` vectorized and the columns unrolled, so a block is
``reg_n * oc_bn / lanes`` vector registers; batch, output-channel blocks and rows are fused
into one parallel loop.  For 1x1 kernels this is a packed GEMM.  int8 data and kernel with
``out_dtype="int32"`` accumulate in int32.
"""

from __future__ import annotations

from collections.abc import Sequence

from tunecli.engine import te
from tunecli.engine.ops import reference as ref
from tunecli.engine.ops.epilogue import create_group_schedule, output_and_accumulator
from tunecli.engine.ops.nn.conv2d import conv2d_NCHWc
from tunecli.engine.ops.strategy import OpCall, Strategy
from tunecli.engine.schedule import Schedule
from tunecli.engine.target import Target
from tunecli.engine.task.space import ConfigSpace, OtherOptionEntity, SplitEntity
from tunecli.engine.task.task import deserialize_args
from tunecli.engine.task.workload_args import TaskArg, Workload
from tunecli.engine.task.workload_flop import conv2d_nchwc_flop
from tunecli.engine.te.window import IntPair, Padding, conv2d_output_shape, get_pad_tuple, pair
from tunecli.errors import InstantiationError, ScheduleError

MAX_REG_N = 64  # TVM's filter on the inner tile_ow factor
#: Columns of a 1x1 register block from which it is reduced over all input channels at once:
#: its weights, reloaded for each block, are then shared by enough positions.  Reducing blocks
#: in turn within each channel block instead lets the compiler keep the accumulators of all
#: blocks live across that loop, which spills when they barely exceed the registers.
FULL_REDUCTION_BLOCK = 4


def fp32_lanes() -> int:
    """float32 lanes of the current target's widest vector (TVM's ``get_fp32_len``)."""
    target = Target.current() or Target("llvm")
    return max(target.vector_bits // 32, 1)


def fallback_register_tile() -> int:
    """Most accumulator vectors of a fallback register tile: TVM's 31 where there are 32 vector
    registers (AVX-512), two less than the register count elsewhere (16 with AVX2)."""
    target = Target.current() or Target("llvm")
    return 31 if target.vector_bits >= 512 else 14


def logical_tensors(*tensors: TaskArg) -> list[te.Tensor]:
    """Template tensor arguments as placeholders (``("TENSOR", shape, dtype)`` or tensors)."""
    return deserialize_args(tensors)


def declare_conv2d_NCHWc(data: TaskArg, kernel: TaskArg, strides: IntPair, padding: Padding,
                         dilation: IntPair = (1, 1), layout: str = "NCHW", out_layout: str = "NCHW",
                         out_dtype: str = "float32") -> OpCall:
    """TVM's workload of ``conv2d_NCHWc.x86``: logical ``data [N, C, H, W]``, ``kernel [O, C, KH, KW]``."""
    data, kernel = logical_tensors(data, kernel)
    if len(data.shape) != 4 or len(kernel.shape) != 4 or data.shape[1] != kernel.shape[1]:
        raise InstantiationError(f"conv2d_NCHWc.x86: data [N, C, H, W] and kernel [O, C, KH, KW] expected, "
                                 f"got {tuple(data.shape)} and {tuple(kernel.shape)}")
    return OpCall((data, kernel), {"stride": strides, "padding": padding, "dilation": dilation,
                                   "layout": layout, "out_layout": out_layout, "out_dtype": out_dtype})


def logical_shapes(data: te.Tensor, kernel: te.Tensor) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """``([N, C, H, W], [O, C, KH, KW])`` of logical (4-D) or blocked (5-D / 6-D) tensors."""
    if len(data.shape) == 5:
        n, cc, h, w, cb = data.shape
        oc, kc, kh, kw, kb, ob = kernel.shape
        return (n, cc * cb, h, w), (oc * ob, kc * kb, kh, kw)
    return tuple(data.shape), tuple(kernel.shape)


def define_conv2d_nchwc_space(cfg: ConfigSpace, data_shape: Sequence[int], kernel_shape: Sequence[int],
                              strides: IntPair, padding: Padding, unroll_small_windows: bool = True,
                              network_blocks: bool = False) -> None:
    """Define TVM's knobs of ``conv2d_NCHWc.x86`` (see the module docstring); a fallback config gets
    :func:`_fallback_config`'s entities (``unroll_small_windows`` and ``network_blocks``: the
    template's own layers pass True, a kernel writing its own blocks False)."""
    n, ic, ih, iw = data_shape
    oc, _, kh, kw = kernel_shape
    pt, pl, pb, pr = get_pad_tuple(padding, (kh, kw))
    sh, sw = pair(strides, "strides")
    oh = (ih - kh + pt + pb) // sh + 1  # TVM's extents (without dilation): they shape the space
    ow = (iw - kw + pl + pr) // sw + 1
    cfg.define_split("tile_ic", ic, num_outputs=2)
    cfg.define_split("tile_oc", oc, num_outputs=2)
    cfg.define_split("tile_ow", ow, num_outputs=2, filter=lambda y: y.size[-1] <= MAX_REG_N)
    if kh == 1 and kw == 1:
        cfg.define_knob("tile_oh", [1, 2] if oh > 1 else [1])
    else:
        cfg.define_knob("unroll_kw", [True, False])
    if cfg.is_fallback:
        _fallback_config(cfg, ic, oc, oh, ow, (kh, kw), unroll_small_windows, network_blocks)


def infer_layout(workload: Workload, cfg: ConfigSpace) -> tuple[tuple, tuple]:
    """The data and output layouts a config of a ``conv2d_NCHWc.x86`` (or depthwise) workload gives,
    ``(((in_shape, "NCHW{ic_bn}c"),), ((out_shape, "NCHW{oc_bn}c"),))`` (TVM's ``conv2d_infer_layout``,
    which the graph tuner reads); the workload is ``(name, data, kernel, strides, padding, dilation,
    layout, out_layout, out_dtype)`` with tensors as ``("TENSOR", shape, dtype)``."""
    _, data, kernel, strides, padding, dilation = workload[:6]
    n, ic, h, w = data[1]
    kh, kw = kernel[1][2:4]
    oc = kernel[1][0] * kernel[1][1] if workload[0].startswith("depthwise") else kernel[1][0]
    oh, ow, _ = conv2d_output_shape((h, w), (kh, kw), strides, padding, dilation)
    ic_bn, oc_bn = cfg["tile_ic"].size[-1], cfg["tile_oc"].size[-1]
    return ((((n, ic // ic_bn, h, w, ic_bn), f"NCHW{ic_bn}c"),),
            (((n, oc // oc_bn, oh, ow, oc_bn), f"NCHW{oc_bn}c"),))


def largest_divisor(n: int, limit: int) -> int:
    """The largest divisor of ``n`` not above ``limit``."""
    return next(b for b in range(min(limit, n), 0, -1) if n % b == 0)


#: Widest kernel window whose columns a fallback config may unroll (:func:`unrolls_window`).
SMALL_WINDOW = 3
#: Widest fallback channel block, in vectors: wider blocks leave a register tile few columns.
MAX_BLOCK_VECTORS = 4


def vector_ops(block: int, lanes: int) -> int:
    """Vector instructions one ``block``-wide row of float32 takes: whole vectors, then a power-of-two
    piece for each set bit of the remainder (how the compiler legalizes an odd-width vector)."""
    return block // lanes + bin(block % lanes).count("1")


def output_channel_block(oc: int, lanes: int) -> int:
    """The channels of a fallback block: the divisor of ``oc`` (up to :data:`MAX_BLOCK_VECTORS`
    vectors) that does the most channels per vector instruction, the narrower one on a tie: a whole
    vector when it divides ``oc``, else e.g. 24 channels on 16 lanes (a vector and a half, 12 channels
    per instruction, where 8 does 8) and 40 of 1000 (13.3; TVM's largest within a vector, 10, does 5)."""
    blocks = [b for b in range(1, min(oc, MAX_BLOCK_VECTORS * lanes) + 1) if oc % b == 0]
    return max(blocks, key=lambda b: (b / vector_ops(b, lanes), -b))


def network_channel_block(channels: int, lanes: int) -> int:
    """The channel block of a network layer's fallback, read and written alike by the fallbacks of
    ``conv2d_NCHWc.x86``, its Winograd and depthwise templates (so no layout transform lies between
    them): :func:`output_channel_block`'s, or with 32 vector registers (16 lanes) the narrowest of at
    least two vectors that does as many channels per instruction (32 of 64-256 channels, 48 of 144).
    Each input value a 1x1 or direct convolution broadcasts then feeds two multiply-adds, and
    ResNet-50's fallback build loses 17 layout transforms (benchmarks/README.md)."""
    block = output_channel_block(channels, lanes)
    rate = block / vector_ops(block, lanes)
    wide = [b for b in range(2 * lanes, MAX_BLOCK_VECTORS * lanes + 1)
            if channels % b == 0 and b / vector_ops(b, lanes) == rate]
    return min(wide) if wide and lanes >= 16 else block


def unrolls_window(window: tuple[int, int]) -> bool:
    """Whether a fallback config unrolls a ``(KH, KW)`` window's columns (``unroll_kw``), in register
    tiles of half the registers: windows of at most :data:`SMALL_WINDOW` columns (not 1x1) on
    targets with 32 vector registers.  The reads of all columns then share their loads and index
    arithmetic; with 16 registers, and for wider windows, TVM's default (not unrolled) is faster
    (benchmarks/README.md)."""
    return window != (1, 1) and window[1] <= SMALL_WINDOW and fp32_lanes() >= 16


def few_input_channels(ic: int, oc: int, window: tuple[int, int], lanes: int) -> bool:
    """Whether a fallback config computes two vectors of output channels per register tile, of a
    quarter of the registers' columns: a window wider than :data:`SMALL_WINDOW` columns over
    fewer input channels than a vector (an image's stem) on targets with 32 vector registers, two
    vectors dividing ``oc``.  Each input value broadcast then feeds two multiply-adds (ResNet's
    7x7 stem: 0.8-0.9x the time of one vector, benchmarks/README.md)."""
    return window[1] > SMALL_WINDOW and ic < lanes and oc % (2 * lanes) == 0 and lanes >= 16


def _fallback_config(cfg: ConfigSpace, ic: int, oc: int, oh: int, ow: int, window: tuple[int, int],
                     unroll_small_windows: bool = True, network_blocks: bool = False) -> None:
    """TVM's ``_fallback_schedule`` of ``conv2d_avx_common`` / ``conv2d_avx_1x1`` (its register tile
    sized for the target's vector registers), with channel blocks of :func:`network_channel_block`
    (without ``network_blocks``, of :func:`output_channel_block`) for the input too: the block a
    fallback producer writes; a window :func:`unrolls_window` names is unrolled (with
    ``unroll_small_windows``) in a tile of half the columns, and a layer of
    :func:`few_input_channels` takes two vectors of output channels in a quarter of them."""
    lanes = fp32_lanes()
    block = network_channel_block if network_blocks else output_channel_block
    oc_bn, ic_bn = block(oc, lanes), block(ic, lanes)
    image = few_input_channels(ic, oc, window, lanes)
    if image:
        oc_bn = 2 * lanes
    cfg["tile_ic"] = SplitEntity([ic // ic_bn, ic_bn])
    cfg["tile_oc"] = SplitEntity([oc // oc_bn, oc_bn])
    if window != (1, 1):
        unroll = unroll_small_windows and unrolls_window(window)
        reg_n = largest_divisor(ow, fallback_register_tile() // (4 if image else 2 if unroll else 1))
        cfg["tile_ow"] = SplitEntity([ow // reg_n, reg_n])
        cfg["unroll_kw"] = OtherOptionEntity(unroll)
        return
    for ow_factor in range(ow, 0, -1):
        if ow % ow_factor:
            continue
        for oh_factor in range(oh, 0, -1):
            if oh % oh_factor == 0 and ow_factor * oh_factor <= fallback_register_tile():
                cfg["tile_oh"] = OtherOptionEntity(oh_factor)
                cfg["tile_ow"] = SplitEntity([ow // ow_factor, ow_factor])
                return


def pack_conv2d_NCHWc(cfg: ConfigSpace, call: OpCall) -> OpCall:
    """The kernel's inputs: blocked ``data`` and packed ``kernel`` placeholders for ``cfg``'s blocks."""
    data, kernel = call.inputs
    define_conv2d_nchwc_space(cfg, data.shape, kernel.shape, call.attrs["stride"], call.attrs["padding"],
                              network_blocks=True)
    n, ic, ih, iw = data.shape
    oc, _, kh, kw = kernel.shape
    ic_bn, oc_bn = cfg["tile_ic"].size[-1], cfg["tile_oc"].size[-1]
    data5 = te.placeholder((n, ic // ic_bn, ih, iw, ic_bn), dtype=data.dtype, name="data")
    kernel6 = te.placeholder((oc // oc_bn, ic // ic_bn, kh, kw, ic_bn, oc_bn), dtype=kernel.dtype,
                             name="kernel")
    return OpCall((data5, kernel6), call.attrs)


def pack_nchwc_stages(data: te.Tensor, kernel: te.Tensor, ic_bn: int,
                      oc_bn: int) -> tuple[te.Tensor, te.Tensor]:
    """Stages from NCHW data and an OIHW kernel to the blocked layouts (TVM's ``_pack_data``)."""
    n, ic, ih, iw = data.shape
    oc, _, kh, kw = kernel.shape
    data_vec = te.compute((n, ic // ic_bn, ih, iw, ic_bn), lambda b, c, y, x, v: data[b, c * ic_bn + v, y, x],
                          name="data_vec", tag="injective,layout_transform")
    kernel_vec = te.compute((oc // oc_bn, ic // ic_bn, kh, kw, ic_bn, oc_bn),
                            lambda o, i, y, x, ib, ob: kernel[o * oc_bn + ob, i * ic_bn + ib, y, x],
                            name="kernel_vec", tag="injective,layout_transform")
    return data_vec, kernel_vec


def conv2d_NCHWc_x86_compute(cfg: ConfigSpace, data: te.Tensor, kernel: te.Tensor, stride: IntPair,
                             padding: Padding, dilation: IntPair, layout: str, out_layout: str,
                             out_dtype: str) -> te.Tensor:
    """Define the knobs, then ``nn.conv2d_NCHWc``; 4-D data and kernel are packed by stages first."""
    data_shape, kernel_shape = logical_shapes(data, kernel)
    define_conv2d_nchwc_space(cfg, data_shape, kernel_shape, stride, padding, network_blocks=True)
    if len(data.shape) == 4:
        data, kernel = pack_nchwc_stages(data, kernel, cfg["tile_ic"].size[-1], cfg["tile_oc"].size[-1])
    n, ic, h, w = data_shape
    oc, _, kh, kw = kernel_shape
    oh, ow, _ = conv2d_output_shape((h, w), (kh, kw), stride, padding, dilation)
    cfg.add_flop(2 * n * oc * oh * ow * ic * kh * kw)
    return conv2d_NCHWc(data, kernel, stride, padding, dilation, layout, out_layout, out_dtype)


def schedule_conv2d_NCHWc(cfg: ConfigSpace, outs: Sequence[te.Tensor],
                          epilogue: te.Tensor | None = None) -> Schedule:
    """Schedule ``conv2d_NCHWc_x86_compute``'s stages.

    An epilogue writes the result: blocked (5-D, e.g. bias + relu) or NCHW (4-D: it unpacks the
    blocks, TVM's ``conv2d_nchw.x86``); either way the accumulator is one register block.
    """
    (conv,) = outs
    s = create_group_schedule(outs, epilogue)
    out, acc = output_and_accumulator(s, conv, epilogue)
    schedule_input_stages(s, conv)
    kh, kw = conv.op.input_tensors[1].shape[2:4]
    oc_bn = conv.shape[-1]
    if kh == 1 and kw == 1:
        _schedule_1x1(cfg, s, out, acc, oc_bn)
    else:
        _schedule_common(cfg, s, out, acc, oc_bn)
    return s


def schedule_input_stages(s: Schedule, conv: te.Tensor, inline_padding: bool = False) -> None:
    """Parallel packing stages of a blocked conv, and its padding: a parallel stage vectorized over
    the channel block, or with ``inline_padding`` bound checks in the convolution's loads."""
    data, kernel = conv.op.input_tensors
    if "pad" in data.op.tag:
        if inline_padding:
            s[data].compute_inline()
        else:
            b, c, y, _, v = s[data].op.axis
            s[data].parallel(s[data].fuse(b, c, y))
            s[data].vectorize(v)
        (data,) = data.op.input_tensors
    for packed in (data, kernel):
        if "layout_transform" in getattr(packed.op, "tag", ""):
            axes = s[packed].op.axis
            s[packed].parallel(s[packed].fuse(*axes[:2]))


def tile_output(s: Schedule, out: te.Tensor, oc_bn: int, reg_n: int,
                oh_factor: int | None = None) -> te.IterVar:
    """Tile the stage writing the result into ``[oh_factor x] reg_n x oc_bn`` blocks, the outer loops
    fused and parallel, ``oc_bn`` vectorized; return the loop the accumulator is computed at.
    ``out`` is blocked ``[N, O/oc_bn, OH, OW, oc_bn]`` or, after an unpack epilogue, ``[N, O, OH, OW]``."""
    if len(out.shape) == 5:
        b, oc, y, x, ob = s[out].op.axis
    elif len(out.shape) == 4:
        b, c, y, x = s[out].op.axis
        oc, ob = s[out].split(c, factor=oc_bn)
    else:
        raise ScheduleError(f"the epilogue {out.op.name} of a blocked convolution must be 5-D (blocked) or "
                            f"4-D (NCHW), got shape {tuple(out.shape)}")
    rows, row_block = [y], []
    if oh_factor is not None:
        yo, yi = s[out].split(y, factor=oh_factor)
        rows, row_block = [yo], [yi]
    xo, xi = s[out].split(x, factor=reg_n)
    s[out].reorder(b, oc, *rows, xo, *row_block, xi, ob)
    s[out].parallel(s[out].fuse(b, oc, *rows))
    s[out].vectorize(ob)
    return xo


def register_block(positions: int, oc_bn: int) -> int:
    """Output positions per register block: all ``positions`` when their ``oc_bn``-wide accumulators
    fit the target's vector registers (beside the weights and a broadcast input), else the size
    of the fewest equal blocks that fit."""
    vectors = -(-oc_bn // fp32_lanes())
    most = max((fallback_register_tile() + 1 - vectors) // vectors, 1)
    if positions <= most:
        return positions
    blocks = -(-positions // most)
    return -(-positions // blocks)


def split_register_blocks(s: Schedule, acc: te.Tensor, x: te.IterVar, reg_n: int,
                          oc_bn: int) -> tuple[list[te.IterVar], te.IterVar, int]:
    """Split the accumulator's ``reg_n`` columns ``x`` into :func:`register_block`-wide blocks when
    they do not all fit the registers; return (the block loop, or none), the columns within a
    block, and the block width."""
    block = register_block(reg_n, oc_bn)
    if block == reg_n:
        return [], x, block
    xb, x = s[acc].split(x, factor=block)
    return [xb], x, block


def _schedule_common(cfg: ConfigSpace, s: Schedule, out: te.Tensor, acc: te.Tensor, oc_bn: int) -> None:
    """``reg_n x oc_bn`` register blocks; the kernel window and input channels reduce outside them.

    A tile of more accumulators than the registers hold is reduced in blocks of
    :func:`register_block` columns, one after the other."""
    reg_n = cfg["tile_ow"].size[-1]
    s[acc].compute_at(s[out], tile_output(s, out, oc_bn, reg_n))
    _, _, _, x, ob = s[acc].op.axis
    icc, icb, kh, kw = s[acc].op.reduce_axis
    blocks, x, _ = split_register_blocks(s, acc, x, reg_n, oc_bn)
    if cfg["unroll_kw"].val:
        s[acc].reorder(*blocks, icc, kh, icb, kw, x, ob)
        s[acc].unroll(kw)
    else:
        s[acc].reorder(*blocks, icc, kh, kw, icb, x, ob)
    s[acc].unroll(x)
    s[acc].vectorize(ob)


def _schedule_1x1(cfg: ConfigSpace, s: Schedule, out: te.Tensor, acc: te.Tensor, oc_bn: int) -> None:
    """A packed GEMM: ``tile_oh x reg_n x oc_bn`` register blocks, the input channels reduce outside.

    A tile of more accumulators than the registers hold is reduced a row at a time, and each
    row in blocks of :func:`register_block` columns.  Blocks of at least
    :data:`FULL_REDUCTION_BLOCK` columns are each reduced over all input channels, their
    accumulators held in registers throughout; narrower blocks (wide ``oc_bn``) take turns
    inside the loop over input-channel blocks, so that the weights of one channel block are
    reused from L1 by all of them."""
    reg_n, oh_factor = cfg["tile_ow"].size[-1], cfg["tile_oh"].val
    xo = tile_output(s, out, oc_bn, reg_n, oh_factor)
    s[acc].compute_at(s[out], xo)
    _, _, y, x, ob = s[acc].op.axis
    icc, icb, kh, kw = s[acc].op.reduce_axis
    if register_block(oh_factor * reg_n, oc_bn) == oh_factor * reg_n:
        s[acc].reorder(icc, icb, kh, kw, y, x, ob)
        s[acc].unroll(y)
    else:
        column_blocks, x, row_block = split_register_blocks(s, acc, x, reg_n, oc_bn)
        blocks = [y, *column_blocks]
        if row_block >= FULL_REDUCTION_BLOCK:
            s[acc].reorder(*blocks, icc, icb, kh, kw, x, ob)
        else:
            s[acc].reorder(icc, *blocks, icb, kh, kw, x, ob)
    s[acc].unroll(x)
    s[acc].vectorize(ob)


CONV2D_NCHWC = Strategy(
    op="conv2d_NCHWc", target_key="cpu", name="conv2d_NCHWc.x86", declare=declare_conv2d_NCHWc,
    compute=conv2d_NCHWc_x86_compute, schedule=schedule_conv2d_NCHWc, reference=ref.conv2d_NCHWc_python,
    outputs=("out",), pack=pack_conv2d_NCHWc,
    summary="TVM's; NCHW[ic_bn]c data, packed kernel, NCHW[oc_bn]c output",
    workload_flop=conv2d_nchwc_flop)
