"""2-D convolution in NCHW layout (TVM's ``topi.nn.conv2d_nchw``)."""

from __future__ import annotations

from dataclasses import dataclass

from tunecli.engine import te
from tunecli.engine.ir import expr as E
from tunecli.engine.te.window import IntPair, Padding, conv2d_output_shape, pair
from tunecli.errors import ExprError

from .pad import pad


def pad_nchw_window(data: te.Tensor, kernel_hw: tuple[int, int], stride: IntPair, padding: Padding,
                    dilation: IntPair, name: str, skip_zero: bool = False) -> tuple[te.Tensor, int, int]:
    """Pad H and W (axes 2 and 3) of an NCHW or channel-blocked ``NCHW{c}c`` tensor for a 2-D window
    op; return ``(padded, out_height, out_width)``.  With ``skip_zero``, zero padding returns
    ``data`` itself (no padding stage)."""
    out_h, out_w, pads = conv2d_output_shape(data.shape[2:4], kernel_hw, stride, padding, dilation)
    top, left, bottom, right = pads
    if skip_zero and not (top or left or bottom or right):
        return data, out_h, out_w
    block = [0] * (len(data.shape) - 4)
    return pad(data, [0, 0, top, left, *block], [0, 0, bottom, right, *block], name=name), out_h, out_w


@dataclass(frozen=True)
class Window2d:
    """A 2-D window over the padded H and W of NCHW (or ``NCHW{c}c``) data: the output's height and
    width, the kernel's taps as reduce axes, and the input row and column an output reads at a tap."""

    padded: te.Tensor
    out_height: int
    out_width: int
    ry: te.IterVar
    rx: te.IterVar
    stride: tuple[int, int]
    dilation: tuple[int, int]

    def row(self, y: E.Expr) -> E.Expr:
        """The input row output row ``y`` reads at tap ``ry``."""
        return y * self.stride[0] + self.ry * self.dilation[0]

    def col(self, x: E.Expr) -> E.Expr:
        """The input column output column ``x`` reads at tap ``rx``."""
        return x * self.stride[1] + self.rx * self.dilation[1]


def window_nchw(data: te.Tensor, kernel_hw: tuple[int, int], stride: IntPair, padding: Padding,
                dilation: IntPair, pad_name: str, tap_names: tuple[str, str],
                skip_zero: bool = False) -> Window2d:
    """The window of a 2-D convolution over ``data`` (padded as ``pad_nchw_window`` pads it), its
    taps reduce axes named ``tap_names``."""
    padded, out_height, out_width = pad_nchw_window(data, kernel_hw, stride, padding, dilation, pad_name,
                                                    skip_zero)
    ry = te.reduce_axis((0, kernel_hw[0]), name=tap_names[0])
    rx = te.reduce_axis((0, kernel_hw[1]), name=tap_names[1])
    return Window2d(padded, out_height, out_width, ry, rx, pair(stride, "stride"), pair(dilation, "dilation"))


def conv2d_nchw(Input: te.Tensor, Filter: te.Tensor, stride: IntPair, padding: Padding, dilation: IntPair,
                out_dtype: str | None = None) -> te.Tensor:
    """Convolution of an NCHW input with an OIHW filter.

    Parameters
    ----------
    Input : te.Tensor
        ``[batch, in_channel, in_height, in_width]``.
    Filter : te.Tensor
        ``[num_filter, in_channel, filter_height, filter_width]``.
    stride, dilation : int or (int, int)
    padding : int, 2- or 4-tuple, "VALID" or "SAME"
    out_dtype : str, optional
        Accumulation and output type (default ``Input.dtype``; use ``int32`` for int8 inputs).

    Returns
    -------
    te.Tensor
        ``[batch, num_filter, out_height, out_width]``; its input 0 is the padding stage
        ``pad_temp``.
    """
    out_dtype = Input.dtype if out_dtype is None else out_dtype
    batch, in_channel, _, _ = Input.shape
    num_filter, channel, kernel_h, kernel_w = Filter.shape
    if channel != in_channel:
        raise ExprError(f"conv2d_nchw: filter has {channel} input channels, input has {in_channel}")
    win = window_nchw(Input, (kernel_h, kernel_w), stride, padding, dilation, "pad_temp", ("ry", "rx"))
    rc = te.reduce_axis((0, in_channel), name="rc")
    return te.compute(
        (batch, num_filter, win.out_height, win.out_width),
        lambda nn, ff, yy, xx: te.sum(
            win.padded[nn, rc, win.row(yy), win.col(xx)].astype(out_dtype)
            * Filter[ff, rc, win.ry, win.rx].astype(out_dtype),
            axis=[rc, win.ry, win.rx],
        ),
        name="conv2d_nchw",
        tag="conv2d_nchw",
    )


def conv2d_NCHWc(data: te.Tensor, kernel: te.Tensor, stride: IntPair, padding: Padding, dilation: IntPair,
                 layout: str = "NCHW", out_layout: str = "NCHW", out_dtype: str | None = None) -> te.Tensor:
    """Convolution of channel-blocked data with a packed kernel (TVM's ``topi.nn.conv2d_NCHWc``).

    Parameters
    ----------
    data : te.Tensor
        ``[batch, in_channel // ic_bn, in_height, in_width, ic_bn]``.
    kernel : te.Tensor
        ``[num_filter // oc_bn, in_channel // ic_bn, filter_height, filter_width, ic_bn, oc_bn]``.
    stride, dilation : int or (int, int)
    padding : int, 2- or 4-tuple, "VALID" or "SAME"
    layout, out_layout : str
        Kept for the workload (TVM logs them); the blocks are read from the shapes.
    out_dtype : str, optional
        Accumulation and output type (default ``data.dtype``; ``int32`` for int8 inputs).

    Returns
    -------
    te.Tensor
        ``[batch, num_filter // oc_bn, out_height, out_width, oc_bn]``; when there is padding its
        input 0 is the padding stage ``data_pad``.
    """
    if len(data.shape) != 5 or len(kernel.shape) != 6:
        raise ExprError(f"conv2d_NCHWc: data must be 5-D and kernel 6-D, got {data.shape} and {kernel.shape}")
    out_dtype = data.dtype if out_dtype is None else out_dtype
    n, ic_chunk, h, w, ic_bn = data.shape
    oc_chunk, k_ic_chunk, kh, kw, k_ic_bn, oc_bn = kernel.shape
    if (k_ic_chunk, k_ic_bn) != (ic_chunk, ic_bn):
        raise ExprError(f"conv2d_NCHWc: kernel {kernel.shape} does not match the channel blocks of data "
                        f"{data.shape} (grouped convolution is not supported)")
    win = window_nchw(data, (kh, kw), stride, padding, dilation, "data_pad", ("kh", "kw"), skip_zero=True)
    icc = te.reduce_axis((0, ic_chunk), name="ic_chunk")
    icb = te.reduce_axis((0, ic_bn), name="ic_block")
    return te.compute(
        (n, oc_chunk, win.out_height, win.out_width, oc_bn),
        lambda b, oc, y, x, ob: te.sum(
            win.padded[b, icc, win.row(y), win.col(x), icb].astype(out_dtype)
            * kernel[oc, icc, win.ry, win.rx, icb, ob].astype(out_dtype),
            axis=[icc, icb, win.ry, win.rx],
        ),
        name="conv2d_NCHWc", tag="conv2d_NCHWc")
