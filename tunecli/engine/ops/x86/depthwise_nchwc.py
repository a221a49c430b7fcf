"""``depthwise_conv2d_NCHWc.x86``: TVM's x86 depthwise convolution on channel-blocked data (MobileNet).

Template arguments are TVM's workload: ``data, kernel, strides, padding, dilation, layout,
out_layout, out_dtype`` with ``data [N, C, H, W]`` and ``kernel [C, 1, KH, KW]`` (channel
multiplier 1, as TVM's template requires).  The kernel's arguments are the blocked tensors:
``data [N, C/ic_bn, H, W, ic_bn]``, ``kernel [C/oc_bn, 1, KH, KW, 1, oc_bn]`` and the output
``[N, C/oc_bn, OH, OW, oc_bn]``.

Knobs, in TVM's order: ``tile_ic``, ``tile_oc`` (channel blocks of the input and the output),
``tile_ow`` (split of OW, inner ``<= 64``: columns per register tile), ``unroll_kw``.  Schedule
(TVM's, except that padding is read through bound checks instead of a padded copy):
``tile_ow x oc_bn`` register blocks accumulated over the window, ``oc_bn`` vectorized, columns
unrolled, channel blocks and rows fused into one parallel loop.
"""

from __future__ import annotations

from collections.abc import Sequence

from tunecli.engine import te
from tunecli.engine.ops import reference as ref
from tunecli.engine.ops.epilogue import create_group_schedule, output_and_accumulator
from tunecli.engine.ops.nn.depthwise_conv2d import depthwise_conv2d_NCHWc
from tunecli.engine.ops.strategy import OpCall, Strategy
from tunecli.engine.ops.x86.conv2d_nchwc import (
    MAX_REG_N,
    fallback_register_tile,
    fp32_lanes,
    largest_divisor,
    logical_tensors,
    network_channel_block,
    schedule_input_stages,
    tile_output,
    vector_ops,
)
from tunecli.engine.schedule import Schedule
from tunecli.engine.task.space import ConfigSpace, OtherOptionEntity, SplitEntity
from tunecli.engine.task.workload_args import TaskArg
from tunecli.engine.task.workload_flop import depthwise_conv2d_nchwc_flop
from tunecli.engine.te.window import IntPair, Padding, conv2d_output_shape
from tunecli.errors import InstantiationError


def declare_depthwise_conv2d_NCHWc(data: TaskArg, kernel: TaskArg, strides: IntPair, padding: Padding,
                                   dilation: IntPair = (1, 1),
                                   layout: str = "NCHW", out_layout: str = "NCHW",
                                   out_dtype: str = "float32") -> OpCall:
    """TVM's workload: logical ``data [N, C, H, W]`` and ``kernel [C, 1, KH, KW]``."""
    data, kernel = logical_tensors(data, kernel)
    if (len(data.shape) != 4 or len(kernel.shape) != 4 or kernel.shape[1] != 1
            or kernel.shape[0] != data.shape[1]):
        raise InstantiationError(f"depthwise_conv2d_NCHWc.x86: data [N, C, H, W] and kernel [C, 1, KH, KW] "
                                 f"expected, got {tuple(data.shape)} and {tuple(kernel.shape)}")
    return OpCall((data, kernel), {"stride": strides, "padding": padding, "dilation": dilation,
                                   "layout": layout, "out_layout": out_layout, "out_dtype": out_dtype})


def _logical(data: te.Tensor, kernel: te.Tensor) -> tuple[tuple[int, ...], tuple[int, int]]:
    """``([N, C, H, W], (KH, KW))`` of logical or blocked tensors."""
    if len(data.shape) == 5:
        n, cc, h, w, cb = data.shape
        return (n, cc * cb, h, w), tuple(kernel.shape[2:4])
    return tuple(data.shape), tuple(kernel.shape[2:4])


def define_depthwise_nchwc_space(cfg: ConfigSpace, data_shape: Sequence[int], kernel_hw: Sequence[int],
                                 strides: IntPair,
                                 padding: Padding, dilation: IntPair) -> None:
    """Define TVM's knobs; a fallback config gets TVM's default entities except three: the channel
    block is ``conv2d_NCHWc.x86``'s (``network_channel_block``, the block its producer writes), the
    kernel's columns are unrolled and a register tile holds at most half the vector registers in
    accumulators.  A window's columns in a loop leave a bound check on every load of the padded
    input, and a wider tile spills: TVM's defaults (28 columns of a 56-wide map, no unrolling) ran
    3-9x slower than these on EfficientNet-B0's layers (benchmarks/README.md)."""
    _, c, h, w = data_shape
    _, ow, _ = conv2d_output_shape((h, w), tuple(kernel_hw), strides, padding, dilation)
    cfg.define_split("tile_ic", c, num_outputs=2)
    cfg.define_split("tile_oc", c, num_outputs=2)
    cfg.define_split("tile_ow", ow, num_outputs=2, filter=lambda y: y.size[-1] <= MAX_REG_N)
    cfg.define_knob("unroll_kw", [True, False])
    if cfg.is_fallback:
        oc_bn = network_channel_block(c, fp32_lanes())
        columns = fallback_register_tile() // 2 // vector_ops(oc_bn, fp32_lanes())
        reg_n = largest_divisor(ow, max(columns, 1))
        cfg["tile_ic"] = SplitEntity([c // oc_bn, oc_bn])
        cfg["tile_oc"] = SplitEntity([c // oc_bn, oc_bn])
        cfg["tile_ow"] = SplitEntity([ow // reg_n, reg_n])
        cfg["unroll_kw"] = OtherOptionEntity(True)


def pack_depthwise_conv2d_NCHWc(cfg: ConfigSpace, call: OpCall) -> OpCall:
    """The kernel's inputs: blocked ``data`` and ``kernel`` placeholders for ``cfg``'s blocks."""
    data, kernel = call.inputs
    a = call.attrs
    define_depthwise_nchwc_space(cfg, data.shape, kernel.shape[2:4], a["stride"], a["padding"], a["dilation"])
    n, c, h, w = data.shape
    kh, kw = kernel.shape[2:4]
    ic_bn, oc_bn = cfg["tile_ic"].size[-1], cfg["tile_oc"].size[-1]
    data5 = te.placeholder((n, c // ic_bn, h, w, ic_bn), dtype=data.dtype, name="data")
    kernel6 = te.placeholder((c // oc_bn, 1, kh, kw, 1, oc_bn), dtype=kernel.dtype, name="kernel")
    return OpCall((data5, kernel6), call.attrs)


def depthwise_conv2d_NCHWc_x86_compute(cfg: ConfigSpace, data: te.Tensor, kernel: te.Tensor, stride: IntPair,
                                       padding: Padding, dilation: IntPair, layout: str, out_layout: str,
                                       out_dtype: str) -> te.Tensor:
    """Define the knobs, then ``nn.depthwise_conv2d_NCHWc``; 4-D tensors are packed by stages first."""
    data_shape, (kh, kw) = _logical(data, kernel)
    define_depthwise_nchwc_space(cfg, data_shape, (kh, kw), stride, padding, dilation)
    if len(data.shape) == 4:
        ic_bn, oc_bn = cfg["tile_ic"].size[-1], cfg["tile_oc"].size[-1]
        n, c, h, w = data.shape
        src_data, src_kernel = data, kernel
        data = te.compute((n, c // ic_bn, h, w, ic_bn),
                          lambda b, i, y, x, v: src_data[b, i * ic_bn + v, y, x],
                          name="data_vec", tag="injective,layout_transform")
        kernel = te.compute((c // oc_bn, 1, kh, kw, 1, oc_bn),
                            lambda o, _m, y, x, _mb, ob: src_kernel[o * oc_bn + ob, 0, y, x],
                            name="kernel_vec", tag="injective,layout_transform")
    n, c, h, w = data_shape
    oh, ow, _ = conv2d_output_shape((h, w), (kh, kw), stride, padding, dilation)
    cfg.add_flop(2 * n * c * oh * ow * kh * kw)
    return depthwise_conv2d_NCHWc(data, kernel, stride, padding, dilation, layout, out_layout, out_dtype)


def schedule_depthwise_conv2d_NCHWc(cfg: ConfigSpace, outs: Sequence[te.Tensor],
                                    epilogue: te.Tensor | None = None) -> Schedule:
    """TVM's schedule of the blocked depthwise convolution; an epilogue (blocked 5-D, or 4-D NCHW
    unpacking the blocks) writes the result."""
    (conv,) = outs
    s = create_group_schedule(outs, epilogue)
    out, acc = output_and_accumulator(s, conv, epilogue)
    # A depthwise convolution does few FMAs per input element (9 for 3x3): a padded copy of the
    # input costs more memory traffic than bound checks on the loads (see benchmarks/README.md).
    schedule_input_stages(s, conv, inline_padding=True)
    s[acc].compute_at(s[out], tile_output(s, out, conv.shape[-1], cfg["tile_ow"].size[-1]))
    _, _, _, x, ob = s[acc].op.axis
    kh, kw = s[acc].op.reduce_axis
    s[acc].reorder(kh, kw, x, ob)
    if cfg["unroll_kw"].val:
        s[acc].unroll(kw)
    s[acc].unroll(x)
    s[acc].vectorize(ob)
    return s


DEPTHWISE_CONV2D_NCHWC = Strategy(
    op="depthwise_conv2d_NCHWc", target_key="cpu", name="depthwise_conv2d_NCHWc.x86",
    declare=declare_depthwise_conv2d_NCHWc, compute=depthwise_conv2d_NCHWc_x86_compute,
    schedule=schedule_depthwise_conv2d_NCHWc, reference=ref.depthwise_conv2d_NCHWc_python, outputs=("out",),
    pack=pack_depthwise_conv2d_NCHWc,
    summary="TVM's (multiplier 1); blocked as `conv2d_NCHWc.x86`",
    workload_flop=depthwise_conv2d_nchwc_flop)
