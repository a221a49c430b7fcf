"""``conv2d_nchw.x86``: NCHW convolution scheduled NCHWc-style (TVM's ``conv2d_avx_common``).

The kernel is re-laid out to ``[CO / VC, CI, KH, KW, VC]`` and the convolution computes an
``[N, CO / VC, OH, OW, VC]`` block layout whose ``RW x VC`` output tile (RW output columns x VC
output channels) is accumulated in a ``cache_write(.., "local")`` stage: VC is vectorized, RW
unrolled, so each tile is ``RW * VC / lanes`` vector registers.  A last stage unpacks to NCHW.

Template arguments, in order: ``N, H, W, CI, CO, KH, KW, stride, padding, dilation, dtype``
(stride/dilation an int or pair, padding as ``topi.nn.conv2d_nchw``; dtype "float32" or "int8"
which accumulates in int32).  Kernel arguments: ``data [N, CI, H, W]``, ``kernel [CO, CI, KH,
KW]``, output ``[N, CO, OH, OW]``.

Knobs: ``tile_oc`` (split of CO, inner = VC, a multiple of 16 up to 64 when CO allows),
``tile_ow`` (split of OW, inner = RW <= 16), ``tile_ic`` (split of the CI reduction),
``unroll_kw`` (0/1: unroll the KW reduction inside the CI block), ``compute_pad`` ("root":
padded input materialised first; "inline": bounds checks inside the convolution; "at_row": the
padded rows one output row needs, computed inside the fused outer loop; only defined when there
is padding), ``parallel`` (0/1: fused outer loops on all cores).
"""

from __future__ import annotations

from collections.abc import Sequence

from tunecli.engine import te
from tunecli.engine.ops import baseline
from tunecli.engine.ops import reference as ref
from tunecli.engine.ops.epilogue import create_group_schedule, output_through_epilogue
from tunecli.engine.ops.nn.conv2d import pad_nchw_window
from tunecli.engine.ops.strategy import OpCall, Strategy
from tunecli.engine.ops.x86.dense import out_dtype_for
from tunecli.engine.ops.x86.gemm import panel_filter
from tunecli.engine.schedule import Schedule
from tunecli.engine.task.space import ConfigSpace
from tunecli.engine.te.window import IntPair, Padding, conv2d_output_shape, pair

MAX_RW = 16


def conv2d_nchwc_compute(data: te.Tensor, kernel: te.Tensor, vc: int, stride: IntPair, padding: Padding,
                         dilation: IntPair, out_dtype: str) -> te.Tensor:
    """Convolution through the packed-kernel block layout; returns the NCHW unpack stage.

    Parameters
    ----------
    data, kernel : te.Tensor
        ``[N, CI, H, W]`` and ``[CO, CI, KH, KW]``.
    vc : int
        Output-channel block; divides CO.
    stride, padding, dilation
        As ``nn.conv2d_nchw``.
    out_dtype : str

    Returns
    -------
    te.Tensor
        ``[N, CO, OH, OW]`` reading ``conv2d_NCHWc [N, CO/vc, OH, OW, vc]``, which reads the
        padded input (when there is padding) and ``kernel_vec [CO/vc, CI, KH, KW, vc]``.
    """
    n, ci, h, w = data.shape
    co, _, kh, kw = kernel.shape
    sh, sw = pair(stride, "stride")
    dh, dw = pair(dilation, "dilation")
    data_pad, oh, ow = pad_nchw_window(data, (kh, kw), stride, padding, dilation, "data_pad", skip_zero=True)
    kernel_vec = te.compute((co // vc, ci, kh, kw, vc), lambda c, i, y, x, v: kernel[c * vc + v, i, y, x],
                            name="kernel_vec", tag="injective,layout_transform")
    ric = te.reduce_axis((0, ci), name="ic")
    rkh = te.reduce_axis((0, kh), name="kh")
    rkw = te.reduce_axis((0, kw), name="kw")
    conv = te.compute(
        (n, co // vc, oh, ow, vc),
        lambda b, c, y, x, v: te.sum(
            data_pad[b, ric, y * sh + rkh * dh, x * sw + rkw * dw].astype(out_dtype)
            * kernel_vec[c, ric, rkh, rkw, v].astype(out_dtype),
            axis=[ric, rkh, rkw],
        ),
        name="conv2d_NCHWc", tag="conv2d_NCHWc")
    return te.compute((n, co, oh, ow), lambda b, c, y, x: conv[b, c // vc, y, x, c % vc], name="conv2d_nchw",
                      tag="injective,unpack_nchwc")


def declare_conv2d_nchw(N: int, H: int, W: int, CI: int, CO: int, KH: int, KW: int, stride: IntPair,
                        padding: Padding, dilation: IntPair = 1, dtype: str = "float32") -> OpCall:
    """``data [N, CI, H, W]`` and ``kernel [CO, CI, KH, KW]`` placeholders and the window attributes."""
    return declare_window_op((N, CI, H, W), (CO, CI, KH, KW), stride, padding, dilation, dtype)


def declare_window_op(data_shape: tuple[int, ...], kernel_shape: tuple[int, ...], stride: IntPair,
                      padding: Padding, dilation: IntPair, dtype: str) -> OpCall:
    """``data`` and ``kernel`` placeholders of ``dtype``, the window attributes and the output type
    of ``dtype`` (the call of a 2-D convolution template)."""
    data = te.placeholder(data_shape, dtype=dtype, name="data")
    kernel = te.placeholder(kernel_shape, dtype=dtype, name="kernel")
    return OpCall((data, kernel), {"stride": stride, "padding": padding, "dilation": dilation,
                                   "out_dtype": out_dtype_for(dtype)})


def conv2d_nchwc_x86_compute(cfg: ConfigSpace, data: te.Tensor, kernel: te.Tensor, stride: IntPair,
                             padding: Padding, dilation: IntPair, out_dtype: str) -> te.Tensor:
    """The knobs of the module docstring, then ``conv2d_nchwc_compute`` with ``VC`` from ``tile_oc``."""
    n, ci, h, w = data.shape
    co, _, kh, kw = kernel.shape
    oh, ow, pads = conv2d_output_shape((h, w), (kh, kw), stride, padding, dilation)
    cfg.define_split("tile_oc", co, num_outputs=2, filter=panel_filter(co))
    cfg.define_split("tile_ow", ow, num_outputs=2, filter=lambda e: e.size[-1] <= MAX_RW)
    cfg.define_split("tile_ic", ci, num_outputs=2)
    cfg.define_knob("unroll_kw", [0, 1])
    if any(pads):
        cfg.define_knob("compute_pad", ["root", "inline", "at_row"])
    cfg.define_knob("parallel", [0, 1])
    cfg.add_flop(2 * n * co * oh * ow * ci * kh * kw)
    return conv2d_nchwc_compute(data, kernel, cfg["tile_oc"].size[-1], stride, padding, dilation, out_dtype)


def schedule_conv2d_nchwc(cfg: ConfigSpace, outs: Sequence[te.Tensor],
                          epilogue: te.Tensor | None = None) -> Schedule:
    """Schedule the stages of ``conv2d_nchwc_compute``; an epilogue absorbs the NCHW unpack stage."""
    (out,) = outs
    s = create_group_schedule(outs, epilogue)
    _schedule_conv2d_nchwc(cfg, s, out, output_through_epilogue(s, outs, epilogue))
    return s


CONV2D_NCHW = Strategy(
    op="conv2d_nchw", target_key="cpu", name="conv2d_nchw.x86", declare=declare_conv2d_nchw,
    compute=conv2d_nchwc_x86_compute, schedule=schedule_conv2d_nchwc, reference=ref.conv2d_nchw_python,
    outputs=("out",), baseline=baseline.CONV2D_NCHW)


def _schedule_conv2d_nchwc(cfg: ConfigSpace, s: Schedule, out: te.Tensor, final: te.Tensor) -> None:
    """Schedule the stages built by ``conv2d_nchwc_compute``; ``final`` writes the result."""
    parallel = bool(cfg["parallel"].val)
    (conv,) = out.op.input_tensors
    (kernel_vec,) = [t for t in conv.op.input_tensors if "layout_transform" in t.op.tag]
    (data_pad,) = [t for t in conv.op.input_tensors if t is not kernel_vec]
    if parallel:
        s[kernel_vec].parallel(s[kernel_vec].op.axis[0])

    CC = s.cache_write(conv, "local")
    b, c, y, x, v = s[conv].op.axis
    xo, xi = cfg["tile_ow"].apply(s, conv, x)
    s[conv].reorder(b, c, y, xo, xi, v)
    fused = s[conv].fuse(b, c, y)
    if parallel:
        s[conv].parallel(fused)
    s[conv].vectorize(v)

    if "pad" in data_pad.op.tag:
        where = cfg["compute_pad"].val
        if where == "inline":
            s[data_pad].compute_inline()
        elif where == "at_row":
            s[data_pad].compute_at(s[conv], fused)
        else:
            pb, pc, py, _ = s[data_pad].op.axis
            pfused = s[data_pad].fuse(pb, pc, py)
            if parallel:
                s[data_pad].parallel(pfused)

    s[CC].compute_at(s[conv], xo)
    b, c, y, x, v = s[CC].op.axis
    ic, kh, kw = s[CC].op.reduce_axis
    ico, ici = cfg["tile_ic"].apply(s, CC, ic)
    if cfg["unroll_kw"].val:
        s[CC].reorder(b, c, y, ico, kh, ici, kw, x, v)
        s[CC].unroll(kw)
    else:
        s[CC].reorder(b, c, y, ico, kh, kw, ici, x, v)
    s[CC].unroll(x)
    s[CC].vectorize(v)

    b, c, y, x = s[final].op.axis
    fused = s[final].fuse(b, c, y)
    if parallel:
        s[final].parallel(fused)
