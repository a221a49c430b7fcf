"""Transposed 2-D convolution in NCHW (TVM's ``topi.nn.conv2d_transpose_nchw``) as a direct
convolution: the data spread ``strides`` apart and padded so that a stride-1 convolution with
the kernel turned half a circle, input and output channels swapped, gives the result.

Arguments are TVM's: ``data [N, C, H, W]``, ``kernel [C, O, KH, KW]`` (IOHW), ``strides``,
``padding`` (as ``get_pad_tuple``: the rows and columns cut from the full output), ``out_dtype``
and ``output_padding`` (rows and columns added at the bottom and right, each below its stride).
"""

from __future__ import annotations

import numpy as np

from tunecli.engine import te
from tunecli.engine.ir import expr as E
from tunecli.engine.te.window import IntPair, Padding, get_pad_tuple, pair
from tunecli.errors import ExprError


def spread_padding(
    kernel_hw: tuple[int, int], padding: Padding, output_padding: IntPair
) -> tuple[int, int, int, int]:
    """``(top, left, bottom, right)`` zeros around the spread data of a transposed convolution."""
    kh, kw = kernel_hw
    top, left, bottom, right = get_pad_tuple(padding, (kh, kw))
    oph, opw = pair(output_padding, "output_padding")
    pads = (kh - 1 - top, kw - 1 - left, kh - 1 - bottom + oph, kw - 1 - right + opw)
    if min(pads) < 0:
        raise ExprError(f"conv2d_transpose: padding {padding} exceeds the {kh}x{kw} kernel")
    return pads


def transpose_output_shape(data_hw: tuple[int, int], kernel_hw: tuple[int, int], strides: IntPair,
                           padding: Padding, output_padding: IntPair) -> tuple[int, int]:
    """``(OH, OW)`` of a transposed convolution (ExprError for an output padding not below its stride)."""
    (sh, sw), (oph, opw) = pair(strides, "strides"), pair(output_padding, "output_padding")
    if not (0 <= oph < sh and 0 <= opw < sw):
        raise ExprError(
            f"conv2d_transpose: output_padding {output_padding} must be below the strides {strides}"
        )
    top, left, bottom, right = spread_padding(kernel_hw, padding, output_padding)
    return (
        (data_hw[0] - 1) * sh + 1 + top + bottom - kernel_hw[0] + 1,
        (data_hw[1] - 1) * sw + 1 + left + right - kernel_hw[1] + 1,
    )


def spread_data(
    data: te.Tensor, kernel_hw: tuple[int, int], strides: IntPair, padding: Padding, output_padding: IntPair
) -> te.Tensor:
    """``data [N, C, H, W]`` spread ``strides`` apart and padded: the input of the direct convolution."""
    n, c, h, w = data.shape
    sh, sw = pair(strides, "strides")
    top, left, bottom, right = spread_padding(kernel_hw, padding, output_padding)
    shape = (n, c, (h - 1) * sh + 1 + top + bottom, (w - 1) * sw + 1 + left + right)

    def body(b: E.Expr, i: E.Expr, y: E.Expr, x: E.Expr) -> E.Expr:
        py, px = y - top, x - left
        iy, ix = te.floordiv(py, sh), te.floordiv(px, sw)
        inside = te.all(py >= 0, px >= 0, te.floormod(py, sh) == 0, te.floormod(px, sw) == 0, iy < h, ix < w)
        return te.if_then_else(inside, data[b, i, iy, ix], E.const(0, data.dtype))

    return te.compute(shape, body, name="data_spread", tag="injective,spread")


def turned_kernel(kernel: te.Tensor) -> te.Tensor:
    """``kernel [C, O, KH, KW]`` as ``[O, C, KH, KW]`` turned half a circle."""
    c, o, kh, kw = kernel.shape
    return te.compute(
        (o, c, kh, kw),
        lambda f, i, y, x: kernel[i, f, kh - 1 - y, kw - 1 - x],
        name="kernel_turned",
        tag="injective,layout_transform",
    )


def conv2d_transpose_nchw_python(
    data: np.ndarray,
    kernel: np.ndarray,
    strides: IntPair,
    padding: Padding,
    out_dtype: str | None = None,
    output_padding: IntPair = (0, 0),
) -> np.ndarray:
    """numpy reference: every input pixel scatters ``kernel`` into the output, then the padding is cut."""
    out_dtype = out_dtype or str(data.dtype)
    acc = np.int64 if np.dtype(out_dtype).kind in "iu" else np.float64
    n, _, h, w = data.shape
    _, o, kh, kw = kernel.shape
    (sh, sw), (oph, opw) = pair(strides, "strides"), pair(output_padding, "output_padding")
    top, left, _, _ = get_pad_tuple(padding, (kh, kw))
    oh, ow = transpose_output_shape((h, w), (kh, kw), strides, padding, output_padding)
    full = np.zeros((n, o, (h - 1) * sh + kh + oph, (w - 1) * sw + kw + opw), dtype=acc)
    x, k = data.astype(acc), kernel.astype(acc)
    for y in range(kh):
        for v in range(kw):
            full[:, :, y : y + (h - 1) * sh + 1 : sh, v : v + (w - 1) * sw + 1 : sw] += np.einsum(
                "nchw,co->nohw", x, k[:, :, y, v]
            )
    return full[:, :, top : top + oh, left : left + ow].astype(out_dtype)
