"""2-D max / average pooling in NCHW or channel-blocked NCHW{b}c layout (TVM's ``topi.nn.pool2d``)."""

from __future__ import annotations

import re

from tunecli.engine import te
from tunecli.engine.ir import expr as E
from tunecli.engine.te.window import IntPair, Padding, pair, pool2d_output_shape
from tunecli.errors import ExprError

from .pad import pad


def pool2d(data: te.Tensor, kernel: IntPair, stride: IntPair, dilation: IntPair, padding: Padding,
           pool_type: str = "max", ceil_mode: bool = False, layout: str = "NCHW", out_layout: str = "",
           count_include_pad: bool = True) -> te.Tensor:
    """Max or average pooling over the H and W axes of an NCHW (or NCHW{b}c) tensor.

    Parameters
    ----------
    data : te.Tensor
        ``[batch, channel, height, width]`` (NCHW{b}c: ``[batch, channel / b, height, width, b]``).
    kernel, stride, dilation : int or (int, int)
    padding : int, (pad_h, pad_w) or (top, left, bottom, right)
        Max pooling pads with the dtype's lowest value, average pooling with zeros.
    pool_type : {"max", "avg"}
    ceil_mode : bool
        Round the output size up instead of down (windows may hang over the bottom/right edge).
    layout, out_layout : str
        ``"NCHW"`` or a channel-blocked ``"NCHW{b}c"`` (``out_layout`` empty or equal to ``layout``).
    count_include_pad : bool
        Average pooling: divide by the window size including padded elements (True) or by the
        number of real elements only (False).  Small integer types are summed in int32 and the
        quotient truncated.

    Returns
    -------
    te.Tensor
        ``[batch, channel, out_height, out_width]`` (blocked: ``[..., out_width, b]``).
    """
    blocked = re.fullmatch(r"NCHW(\d+)c", layout)
    if (layout != "NCHW" and not blocked) or out_layout not in ("", layout):
        raise ExprError(f"pool2d: only the NCHW and NCHW{{b}}c layouts are supported, got {layout!r} -> "
                        f"{out_layout!r}")
    if len(data.shape) != (5 if blocked else 4):
        raise ExprError(f"pool2d: a {layout} tensor has {5 if blocked else 4} dimensions, "
                        f"got {tuple(data.shape)}")
    if pool_type not in ("max", "avg"):
        raise ExprError(f"pool2d: pool_type must be 'max' or 'avg', got {pool_type!r}")
    batch, channel, height, width = data.shape[:4]
    block = tuple(data.shape[4:])  # (b,) for NCHW{b}c: an extra innermost axis
    kh, kw = pair(kernel, "kernel")
    sh, sw = pair(stride, "stride")
    dh, dw = pair(dilation, "dilation")
    dkh, dkw = (kh - 1) * dh + 1, (kw - 1) * dw + 1
    try:
        out_h, out_w, (pt, pl, pb, pr) = pool2d_output_shape((int(height), int(width)), (kh, kw), stride,
                                                              padding, dilation, ceil_mode)
    except ExprError as err:
        raise ExprError(f"pool2d: {err}") from None
    # the padded tensor must cover every window, including the ones ceil_mode adds
    need_h = (out_h - 1) * sh + dkh
    need_w = (out_w - 1) * sw + dkw
    after_h, after_w = max(need_h - height - pt, 0), max(need_w - width - pl, 0)
    fill = E.min_value(data.dtype) if pool_type == "max" else E.const(0, data.dtype)
    extra = [0] * len(block)
    padded = pad(data, [0, 0, pt, pl, *extra], [0, 0, after_h, after_w, *extra], pad_value=fill,
                 name="pad_temp")
    rh = te.reduce_axis((0, kh), name="rv0")
    rw = te.reduce_axis((0, kw), name="rv1")
    if pool_type == "max":
        return te.compute(
            (batch, channel, out_h, out_w, *block),
            lambda n, c, h, w, *v: te.max(padded[(n, c, h * sh + rh * dh, w * sw + rw * dw, *v)],
                                          axis=[rh, rw]),
            name="pool_max", tag="pool_max")
    acc = "int32" if data.dtype in ("int8", "uint8", "int16", "uint16") else data.dtype
    pool_sum = te.compute(
        (batch, channel, out_h, out_w, *block),
        lambda n, c, h, w, *v: te.sum(padded[(n, c, h * sh + rh * dh, w * sw + rw * dw, *v)].astype(acc),
                                      axis=[rh, rw]),
        name="pool_sum", tag="pool_sum")

    def _count(o: E.Expr, s: int, before: int, after: int, k: int, d: int, size: int) -> E.Expr:
        start = o * s - before
        end = start + (k - 1) * d
        if count_include_pad:
            end = te.min(end, E.const(size + after - 1))
            return (end - start) // d + 1
        jumps = te.max((d - 1 - start) // d, E.const(0))
        end = te.min(end, E.const(size - 1))
        return te.max((end - (start + jumps * d)) // d + 1, E.const(0))

    def _avg(n: E.Expr, c: E.Expr, h: E.Expr, w: E.Expr, *v: E.Expr) -> E.Expr:
        if count_include_pad and not ceil_mode:
            num = E.const(kh * kw)
        else:
            num = (_count(h, sh, pt, pb, kh, dh, height) * _count(w, sw, pl, pr, kw, dw, width))
            num = te.max(num, E.const(1))
        return (pool_sum[(n, c, h, w, *v)] / num.astype(acc)).astype(data.dtype)

    return te.compute((batch, channel, out_h, out_w, *block), _avg, name="pool_avg", tag="elemwise,pool_avg")
