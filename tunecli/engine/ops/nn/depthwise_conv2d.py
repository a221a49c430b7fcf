"""Depthwise 2-D convolution in NCHW layout (TVM's ``topi.nn.depthwise_conv2d_nchw``)."""

from __future__ import annotations

from typing import Any

from tunecli.engine import te
from tunecli.errors import ExprError

from .conv2d import pad_nchw_window
from .pad import pair


def depthwise_conv2d_nchw(Input: te.Tensor, Filter: te.Tensor, stride: Any, padding: Any, dilation: Any,
                          out_dtype: str | None = None) -> te.Tensor:
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
    stride_h, stride_w = pair(stride, "stride")
    dilation_h, dilation_w = pair(dilation, "dilation")
    batch, in_channel, _, _ = Input.shape
    filter_channel, multiplier, filter_height, filter_width = Filter.shape
    if filter_channel != in_channel:
        raise ExprError(f"depthwise_conv2d_nchw: filter has {filter_channel} channels, input has "
                        f"{in_channel}")
    padded, out_height, out_width = pad_nchw_window(Input, (filter_height, filter_width), stride, padding,
                                                    dilation, "PaddedInput")
    di = te.reduce_axis((0, filter_height), name="di")
    dj = te.reduce_axis((0, filter_width), name="dj")
    return te.compute(
        (batch, in_channel * multiplier, out_height, out_width),
        lambda b, c, i, j: te.sum(
            padded[b, c // multiplier, i * stride_h + di * dilation_h, j * stride_w + dj * dilation_w].astype(
                out_dtype)
            * Filter[c // multiplier, c % multiplier, di, dj].astype(out_dtype),
            axis=[di, dj],
        ),
        name="DepthwiseConv2d",
        tag="depthwise_conv2d_nchw",
    )
