"""``conv2d_nchw_spatial_pack.arm_cpu``: TVM's spatial-pack NCHW convolution for ARM CPUs.

The knobs, their order and their meaning are TVM's (``topi/arm_cpu/conv2d_spatial_pack.py``,
``num_tile=2``), so a config index of TVM's ``arm_cpu`` tophub logs denotes the same entity here:

``tile_co``, ``tile_oh``, ``tile_ow``
    splits of the output channels, rows and columns into ``(outer, VC | VH | VW)``;
``reorder_0``
    ``[n, co, oh, ow, ci, kh, kw, vh, vw, vc]`` or ``[..., kw, vc, vh, vw]``;
``ann_reduce``
    unroll (or not) ``kh`` and ``kw``;
``ann_spatial``
    unroll (or not) ``vh`` and ``vw``, unroll or vectorize ``vc``.

The input is padded and packed into ``VH x VW`` output-tile windows (``data_vec``), the kernel
into ``VC``-channel blocks (``kernel_vec``); ``conv`` accumulates one ``VH x VW x VC`` block per
``(co, oh, ow)`` and is computed at the unpacked output's ``ow`` loop. Unlike TVM's tuning mode,
the kernel is packed inside the measured kernel (TVM replaces it by a pre-packed placeholder),
so the kernel's arguments are the operator's own: ``data [N, CI, H, W]``, ``kernel [CO, CI, KH,
KW]``, output ``[N, CO, OH, OW]``.

Template arguments are TVM's: ``data, kernel, strides, padding, dilation, out_dtype`` (tensors
as ``["TENSOR", shape, dtype]`` in a job or a log, padding as TVM writes it, e.g. ``[3, 3, 3, 3]``).
"""

from __future__ import annotations

from collections.abc import Sequence

from tunecli.engine import te
from tunecli.engine.ops import baseline
from tunecli.engine.ops import reference as ref
from tunecli.engine.ops.epilogue import create_group_schedule, inline_between
from tunecli.engine.ops.nn.pad import pad
from tunecli.engine.ops.strategy import OpCall, Strategy
from tunecli.engine.schedule import Schedule
from tunecli.engine.task.space import ConfigSpace
from tunecli.engine.task.workload_args import TaskArg, as_placeholder
from tunecli.engine.te.window import IntPair, Padding, conv2d_output_shape, pair


def declare_conv2d_spatial_pack(data: TaskArg, kernel: TaskArg, strides: IntPair, padding: Padding,
                                dilation: IntPair = 1, out_dtype: str = "float32") -> OpCall:
    """``data [N, CI, H, W]`` and ``kernel [CO, CI, KH, KW]`` (``[C, multiplier, KH, KW]`` for a
    depthwise one) and the window attributes, in the order of TVM's conv2d templates."""
    return OpCall((as_placeholder(data, "data"), as_placeholder(kernel, "kernel")),
                  {"stride": strides, "padding": padding, "dilation": dilation, "out_dtype": out_dtype})


def conv2d_spatial_pack_compute(cfg: ConfigSpace, data: te.Tensor, kernel: te.Tensor, stride: IntPair,
                                padding: Padding,
                                dilation: IntPair, out_dtype: str) -> te.Tensor:
    """TVM's knobs (module docstring), then the packed convolution; returns the unpacked output."""
    N, CI, IH, IW = (int(d) for d in data.shape)
    CO, _, KH, KW = (int(d) for d in kernel.shape)
    HSTR, WSTR = pair(stride, "stride")
    DH, DW = pair(dilation, "dilation")
    OH, OW, (top, left, bottom, right) = conv2d_output_shape((IH, IW), (KH, KW), stride, padding, dilation)
    data_pad = pad(data, [0, 0, top, left], [0, 0, bottom, right], name="data_pad")

    n, co, oh, ow = cfg.axis(N), cfg.axis(CO), cfg.axis(OH), cfg.axis(OW)
    ci, kh, kw = cfg.reduce_axis(CI), cfg.reduce_axis(KH), cfg.reduce_axis(KW)
    co, vc = cfg.define_split("tile_co", co, num_outputs=2)
    oh, vh = cfg.define_split("tile_oh", oh, num_outputs=2)
    ow, vw = cfg.define_split("tile_ow", ow, num_outputs=2)
    cfg.define_reorder("reorder_0", [n, co, oh, ow, ci, kh, kw, vh, vw, vc], policy="candidate",
                       candidate=[[n, co, oh, ow, ci, kh, kw, vh, vw, vc],
                                  [n, co, oh, ow, ci, kh, kw, vc, vh, vw]])
    cfg.define_annotate("ann_reduce", [kh, kw], policy="try_unroll")
    cfg.define_annotate("ann_spatial", [vh, vw, vc], policy="try_unroll_vec")
    cfg.add_flop(2 * N * CO * OH * OW * CI * KH * KW)

    VC, VH, VW = cfg["tile_co"].size[-1], cfg["tile_oh"].size[-1], cfg["tile_ow"].size[-1]
    kvshape = (CO // VC, CI, KH, KW, VC)
    ovshape = (N, CO // VC, OH // VH, OW // VW, VH, VW, VC)
    dilated = DH != 1 or DW != 1
    if dilated:
        dvshape = (N, OH // VH, OW // VW, CI, KH, KW, VH, VW)
        data_vec = te.compute(dvshape, lambda n, h, w, ci, kh, kw, vh, vw: data_pad[
            n, ci, (h * VH + vh) * HSTR + kh * DH, (w * VW + vw) * WSTR + kw * DW], name="data_vec_undilated")
    else:
        dvshape = (N, OH // VH, OW // VW, CI, VH * HSTR + KH - 1, VW * WSTR + KW - 1)
        data_vec = te.compute(dvshape, lambda n, h, w, ci, vh, vw: data_pad[
            n, ci, h * VH * HSTR + vh, w * VW * WSTR + vw], name="data_vec")
    kernel_vec = te.compute(kvshape, lambda co, ci, kh, kw, vc: kernel[co * VC + vc, ci, kh, kw],
                            name="kernel_vec")

    ci = te.reduce_axis((0, CI), name="ci")
    kh = te.reduce_axis((0, KH), name="kh")
    kw = te.reduce_axis((0, KW), name="kw")
    if dilated:
        conv = te.compute(ovshape, lambda n, co, h, w, vh, vw, vc: te.sum(
            data_vec[n, h, w, ci, kh, kw, vh, vw].astype(out_dtype)
            * kernel_vec[co, ci, kh, kw, vc].astype(out_dtype), axis=[ci, kh, kw]), name="conv")
    else:
        conv = te.compute(ovshape, lambda n, co, h, w, vh, vw, vc: te.sum(
            data_vec[n, h, w, ci, vh * HSTR + kh, vw * WSTR + kw].astype(out_dtype)
            * kernel_vec[co, ci, kh, kw, vc].astype(out_dtype), axis=[ci, kh, kw]), name="conv")
    return te.compute((N, CO, OH, OW), lambda n, co, h, w: conv[
        n, co // VC, h // VH, w // VW, h % VH, w % VW, co % VC], name="output_unpack",
        tag="spatial_conv2d_output")


def schedule_conv2d_spatial_pack(cfg: ConfigSpace, outs: Sequence[te.Tensor],
                                 epilogue: te.Tensor | None = None) -> Schedule:
    """TVM's ``schedule_conv2d_spatial_pack_nchw``; an epilogue takes the unpacked output's place."""
    (output,) = outs
    s = create_group_schedule(outs, epilogue)
    last = output
    if epilogue is not None:
        inline_between(s, [output], epilogue)
        last = epilogue
    conv = output.op.input_tensors[0]
    data_vec, kernel_vec = conv.op.input_tensors
    s[data_vec.op.input_tensors[0]].compute_inline()  # the padding
    _schedule(cfg, s, data_vec, kernel_vec, conv, output, last)
    return s


def _schedule(cfg: ConfigSpace, s: Schedule, data_vec: te.Tensor, kernel_vec: te.Tensor, conv: te.Tensor,
              output: te.Tensor, last: te.Tensor) -> None:
    n, co, oh, ow, vh, vw, vc = s[conv].op.axis
    ci, kh, kw = s[conv].op.reduce_axis
    tiles = [cfg["tile_oh"].size[-1], cfg["tile_ow"].size[-1], cfg["tile_co"].size[-1]]

    cfg["reorder_0"].apply(s, conv, [n, co, oh, ow, ci, kh, kw, vh, vw, vc])
    cfg["ann_reduce"].apply(s, conv, [kh, kw], axis_lens=[int(kh.dom.extent), int(kw.dom.extent)],
                            max_unroll=None, cfg=cfg)
    cfg["ann_spatial"].apply(s, conv, [vh, vw, vc], axis_lens=tiles, max_unroll=None, cfg=cfg)

    n, co, h, w = s[last].op.axis
    co, vc = cfg["tile_co"].apply(s, last, co)
    oh, vh = cfg["tile_oh"].apply(s, last, h)
    ow, vw = cfg["tile_ow"].apply(s, last, w)
    s[last].reorder(n, co, oh, ow, vh, vw, vc)
    if last is not output:
        s[output].compute_inline()
        cfg["ann_spatial"].apply(s, last, [vh, vw, vc], axis_lens=tiles, max_unroll=16, cfg=cfg)
    s[conv].compute_at(s[last], ow)
    s[last].parallel(co)

    s[data_vec].parallel(s[data_vec].op.axis[1])
    s[kernel_vec].parallel(s[kernel_vec].op.axis[0])


CONV2D_NCHW_SPATIAL_PACK = Strategy(
    op="conv2d_nchw", target_key="arm_cpu", name="conv2d_nchw_spatial_pack.arm_cpu",
    declare=declare_conv2d_spatial_pack, compute=conv2d_spatial_pack_compute,
    schedule=schedule_conv2d_spatial_pack, reference=ref.conv2d_nchw_python, outputs=("out",),
    summary="TVM's ARM spatial-pack template (knobs and arguments as in TVM's arm_cpu logs)",
    baseline=baseline.CONV2D_NCHW)
