"""Depthwise 2-D convolution in NCHW layout (TVM's ``topi.nn.depthwise_conv2d_nchw``)."""

from __future__ import annotations

from tunecli.engine import te
from tunecli.engine.ir import expr as E
from tunecli.engine.te.window import IntPair, Padding
from tunecli.errors import ExprError

from .conv2d import window_nchw


def depthwise_conv2d_nchw(Input: te.Tensor, Filter: te.Tensor, stride: IntPair, padding: Padding,
                          dilation: IntPair, out_dtype: str | None = None) -> te.Tensor:
    """Depthwise convolution: every input channel has ``channel_multiplier`` filters of its own.

    Parameters
    ----------
    Input : te.Tensor
        ``[batch, in_channel, in_height, in_width]``.
    Filter : te.Tensor
        ``[in_channel, channel_multiplier, filter_height, filter_width]``.
    stride, dilation : int or (int, int)
    padding : int, 2- or 4-tuple, "VALID" or "SAME"
    out_dtype : str, optional
        Accumulation and output type (default ``Input.dtype``).

    Returns
    -------
    te.Tensor
        ``[batch, in_channel * channel_multiplier, out_height, out_width]``; output channel ``c``
        reads input channel ``c // channel_multiplier``.
    """
    out_dtype = Input.dtype if out_dtype is None else out_dtype
    batch, in_channel, _, _ = Input.shape
    filter_channel, multiplier, filter_height, filter_width = Filter.shape
    if filter_channel != in_channel:
        raise ExprError(f"depthwise_conv2d_nchw: filter has {filter_channel} channels, input has "
                        f"{in_channel}")
    win = window_nchw(Input, (filter_height, filter_width), stride, padding, dilation, "PaddedInput",
                      ("di", "dj"))
    return te.compute(
        (batch, in_channel * multiplier, win.out_height, win.out_width),
        lambda b, c, i, j: te.sum(
            win.padded[b, c // multiplier, win.row(i), win.col(j)].astype(out_dtype)
            * Filter[c // multiplier, c % multiplier, win.ry, win.rx].astype(out_dtype),
            axis=[win.ry, win.rx],
        ),
        name="DepthwiseConv2d",
        tag="depthwise_conv2d_nchw",
    )


def depthwise_conv2d_NCHWc(data: te.Tensor, kernel: te.Tensor, stride: IntPair, padding: Padding,
                           dilation: IntPair, layout: str = "NCHW", out_layout: str = "NCHW",
                           out_dtype: str | None = None) -> te.Tensor:
    """Depthwise convolution of channel-blocked data (TVM's ``depthwise_conv2d_NCHWc``, multiplier 1).

    Parameters
    ----------
    data : te.Tensor
        ``[batch, channel // ic_bn, in_height, in_width, ic_bn]``.
    kernel : te.Tensor
        ``[channel // oc_bn, 1, filter_height, filter_width, 1, oc_bn]``.
    stride, dilation : int or (int, int)
    padding : int, 2- or 4-tuple, "VALID" or "SAME"
    layout, out_layout : str
        Kept for the workload; the blocks are read from the shapes.
    out_dtype : str, optional
        Accumulation and output type (default ``data.dtype``).

    Returns
    -------
    te.Tensor
        ``[batch, channel // oc_bn, out_height, out_width, oc_bn]``; when there is padding its
        input 0 is the padding stage ``data_pad``.
    """
    if len(data.shape) != 5 or len(kernel.shape) != 6:
        raise ExprError(f"depthwise_conv2d_NCHWc: data must be 5-D and kernel 6-D, got {data.shape} and "
                        f"{kernel.shape}")
    out_dtype = data.dtype if out_dtype is None else out_dtype
    n, ic_chunk, h, w, ic_bn = data.shape
    oc_chunk, m_chunk, kh, kw, m_bn, oc_bn = kernel.shape
    if m_chunk * m_bn != 1 or oc_chunk * oc_bn != ic_chunk * ic_bn:
        raise ExprError(f"depthwise_conv2d_NCHWc: kernel {kernel.shape} must have multiplier 1 and as many "
                        f"channels as data {data.shape}")
    win = window_nchw(data, (kh, kw), stride, padding, dilation, "data_pad", ("kh", "kw"), skip_zero=True)

    def channel(oc: E.Expr, ob: E.Expr) -> tuple[E.Expr, E.Expr]:
        if ic_bn == oc_bn:  # the same blocks: no index arithmetic
            return oc, ob
        c = oc * oc_bn + ob
        return c // ic_bn, c % ic_bn

    def body(b: E.Expr, oc: E.Expr, y: E.Expr, x: E.Expr, ob: E.Expr) -> E.Expr:
        cc, cb = channel(oc, ob)
        return te.sum(win.padded[b, cc, win.row(y), win.col(x), cb].astype(out_dtype)
                      * kernel[oc, 0, win.ry, win.rx, 0, ob].astype(out_dtype), axis=[win.ry, win.rx])

    return te.compute((n, oc_chunk, win.out_height, win.out_width, oc_bn), body,
                      name="depthwise_conv2d_NCHWc", tag="depthwise_conv2d_NCHWc")
