"""3-D convolution in NCDHW (TVM's ``topi.nn.conv3d_ncdhw``): the padding rule, the plain te
definition and the numpy reference.

Padding is TVM's ``get_pad_tuple3d``: one number for every side, three (depth, height, width:
both sides each) or six (front, top, left, back, bottom, right).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeAlias

import numpy as np

from tunecli.engine import te
from tunecli.engine.ops.nn.pad import pad
from tunecli.errors import ExprError

#: An int for all three axes, or a (depth, height, width) triple.
IntTriple: TypeAlias = "int | Sequence[int]"
#: A 3-D padding: an int, (depth, height, width), or (front, top, left, back, bottom, right).
Padding3d: TypeAlias = "int | Sequence[int]"


def triple(value: IntTriple, what: str) -> tuple[int, int, int]:
    """An int or three ints as ``(depth, height, width)`` (ExprError naming ``what`` otherwise)."""
    values = (value,) * 3 if isinstance(value, (int, np.integer)) else tuple(value)
    if len(values) != 3 or not all(isinstance(v, (int, np.integer)) for v in values):
        raise ExprError(f"conv3d: {what} must be an int or three ints, got {value!r}")
    return int(values[0]), int(values[1]), int(values[2])


def pad_tuple3d(padding: Padding3d) -> tuple[int, int, int, int, int, int]:
    """``(front, top, left, back, bottom, right)`` of a 3-D window's ``padding`` (1, 3 or 6 numbers)."""
    values = (padding,) if isinstance(padding, (int, np.integer)) else tuple(padding)
    if len(values) == 1:
        values = values * 6
    elif len(values) == 3:
        values = values * 2
    if len(values) != 6 or any(int(v) < 0 for v in values):
        raise ExprError(f"conv3d: padding must be 1, 3 or 6 non-negative ints, got {padding!r}")
    return tuple(int(v) for v in values)  # type: ignore[return-value]


def conv3d_output_shape(in_dhw: Sequence[int], kernel_dhw: Sequence[int], strides: IntTriple,
                        padding: Padding3d, dilation: IntTriple) -> tuple[int, int, int]:
    """``(OD, OH, OW)`` of a 3-D convolution (ExprError when the window does not fit)."""
    pads = pad_tuple3d(padding)
    s, d = triple(strides, "strides"), triple(dilation, "dilation")
    out = tuple(
        (size + pads[i] + pads[i + 3] - (k - 1) * d[i] - 1) // s[i] + 1
        for i, (size, k) in enumerate(zip(in_dhw, kernel_dhw, strict=True))
    )
    if min(out) < 1:
        raise ExprError(
            f"conv3d: the {tuple(kernel_dhw)} window does not fit the {tuple(in_dhw)} input "
            f"with padding {pads}"
        )
    return out  # type: ignore[return-value]


def pad_ncdhw(data: te.Tensor, padding: Padding3d, name: str = "data_pad") -> te.Tensor:
    """``data [N, C, D, H, W]`` padded with zeros (itself when there is no padding)."""
    pads = pad_tuple3d(padding)
    if not any(pads):
        return data
    return pad(data, (0, 0, *pads[:3]), (0, 0, *pads[3:]), name=name)


def conv3d_ncdhw(
    data: te.Tensor,
    kernel: te.Tensor,
    strides: IntTriple,
    padding: Padding3d,
    dilation: IntTriple,
    out_dtype: str | None = None,
) -> te.Tensor:
    """``data [N, C, D, H, W]`` convolved with ``kernel [O, C, KD, KH, KW]``: ``[N, O, OD, OH, OW]``."""
    out_dtype = out_dtype or data.dtype
    n, c = data.shape[:2]
    o, _, kd, kh, kw = kernel.shape
    od, oh, ow = conv3d_output_shape(data.shape[2:], (kd, kh, kw), strides, padding, dilation)
    (sd, sh, sw), (dd, dh, dw) = triple(strides, "strides"), triple(dilation, "dilation")
    data_pad = pad_ncdhw(data, padding)
    rc = te.reduce_axis((0, c), name="rc")
    rz, ry, rx = (te.reduce_axis((0, k), name=f"r{a}") for k, a in zip((kd, kh, kw), "zyx", strict=True))
    return te.compute(
        (n, o, od, oh, ow),
        lambda b, f, z, y, x: te.sum(
            data_pad[b, rc, z * sd + rz * dd, y * sh + ry * dh, x * sw + rx * dw].astype(out_dtype)
            * kernel[f, rc, rz, ry, rx].astype(out_dtype),
            axis=[rc, rz, ry, rx],
        ),
        name="conv3d_ncdhw",
        tag="conv3d_ncdhw",
    )


def conv3d_ncdhw_python(
    data: np.ndarray,
    kernel: np.ndarray,
    strides: IntTriple,
    padding: Padding3d,
    dilation: IntTriple = 1,
    out_dtype: str | None = None,
) -> np.ndarray:
    """numpy reference of :func:`conv3d_ncdhw` (accumulating in float64, or int64 for ints)."""
    out_dtype = out_dtype or str(data.dtype)
    pads = pad_tuple3d(padding)
    (sd, sh, sw), (dd, dh, dw) = triple(strides, "strides"), triple(dilation, "dilation")
    acc = np.int64 if np.dtype(out_dtype).kind in "iu" else np.float64
    x = np.pad(data.astype(acc), ((0, 0), (0, 0), *((pads[i], pads[i + 3]) for i in range(3))))
    w = kernel.astype(acc)
    o, _, kd, kh, kw = w.shape
    od, oh, ow = conv3d_output_shape(data.shape[2:], (kd, kh, kw), strides, padding, dilation)
    out = np.zeros((data.shape[0], o, od, oh, ow), dtype=acc)
    for z in range(kd):
        for y in range(kh):
            for v in range(kw):
                window = x[
                    :,
                    :,
                    z * dd : z * dd + (od - 1) * sd + 1 : sd,
                    y * dh : y * dh + (oh - 1) * sh + 1 : sh,
                    v * dw : v * dw + (ow - 1) * sw + 1 : sw,
                ]
                out += np.einsum("ncdhw,oc->nodhw", window, w[:, :, z, y, v])
    return out.astype(out_dtype)
