"""2-D convolution: ``nn.conv2d`` (any layout of N, C, H, W, incl. ``NCHW{c}c`` with kernels
``OIHW{i}i{o}o``; strides, padding, dilation, groups incl. depthwise) and TVM's
``nn.contrib_conv2d_NCHWc`` / ``nn.contrib_depthwise_conv2d_NCHWc`` (the same operator after layout
alteration).  Pattern OUT_ELEMWISE_FUSABLE."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass

import numpy as np

from tunecli.engine.ops.reference import conv2d_nchw_python, depthwise_conv2d_python_nchw
from tunecli.engine.task.space import ConfigSpace

from ..graph_expr import Call, Expr
from ..layout import convert_array, layout_shape, primal_sizes
from ..op_registry import Attrs, OpPattern, Solved, expect, tensor_arg
from ..types import TensorType, Type
from .define import IntOrInts, int_tuple, make_call, out_dtype_of, register_op, window_pads


@dataclass(frozen=True)
class Conv2DAttrs(Attrs):
    """Attributes of ``nn.conv2d`` (TVM's ``Conv2DAttrs``); ``padding`` is kept as given (1, 2 or 4
    numbers), :func:`conv2d_padding` gives ``(top, left, bottom, right)``."""

    strides: tuple[int, ...] = (1, 1)
    padding: tuple[int, ...] = (0, 0)
    dilation: tuple[int, ...] = (1, 1)
    groups: int = 1
    channels: int | None = None
    kernel_size: tuple[int, ...] | None = None
    data_layout: str = "NCHW"
    kernel_layout: str = "OIHW"
    out_layout: str = ""
    out_dtype: str = ""


@dataclass(frozen=True)
class Conv2DNCHWcAttrs(Conv2DAttrs):
    """Attributes of ``nn.contrib_conv2d_NCHWc`` / ``nn.contrib_depthwise_conv2d_NCHWc``: TVM's
    ``Conv2DAttrs`` plus ``config``, the tuning config the layout alteration chose the block sizes
    by (its ``tile_ic`` / ``tile_oc``), which the call's kernel is then compiled with (None: the
    config the current dispatch context gives the call's workload)."""

    config: ConfigSpace | None = None


def conv2d_padding(attrs: Conv2DAttrs, kernel_hw: tuple[int, int] = (1, 1)) -> tuple[int, int, int, int]:
    """``(top, left, bottom, right)`` padding of a conv2d call."""
    dh, dw = attrs.dilation
    return window_pads("nn.conv2d", attrs.padding, ((kernel_hw[0] - 1) * dh + 1, (kernel_hw[1] - 1) * dw + 1))


def _relation(op_name: str, arg_types: Sequence[Type | None], attrs: Conv2DAttrs) -> Type | Solved:
    data = tensor_arg(op_name, arg_types, 0, "data")
    d = primal_sizes(data.shape, attrs.data_layout)
    expect(set(d) == set("NCHW"), op_name, f"data_layout {attrs.data_layout!r} must have the axes N, C, H, W")
    groups = attrs.groups
    expect(
        groups >= 1 and d["C"] % groups == 0,
        op_name,
        f"{d['C']} input channels do not split into {groups} groups",
    )
    weight = arg_types[1]
    if weight is None:
        expect(
            attrs.channels is not None and attrs.kernel_size is not None,
            op_name,
            "the weight has no shape; give the weight a shape or the conv channels and kernel_size",
        )
        w = {"O": attrs.channels, "I": d["C"] // groups, "H": attrs.kernel_size[0], "W": attrs.kernel_size[1]}
        weight = TensorType(layout_shape(w, attrs.kernel_layout), data.dtype)
    else:
        weight = tensor_arg(op_name, arg_types, 1, "weight")
        w = primal_sizes(weight.shape, attrs.kernel_layout)
    expect(
        set(w) == set("OIHW"), op_name, f"kernel_layout {attrs.kernel_layout!r} must have the axes O, I, H, W"
    )
    expect(
        w["I"] * groups == d["C"],
        op_name,
        f"data has {d['C']} channels but the weight {weight.shape} ({attrs.kernel_layout}) expects "
        f"{w['I'] * groups} ({w['I']} per group x {groups} groups)",
    )
    expect(w["O"] % groups == 0, op_name, f"{w['O']} output channels do not split into {groups} groups")
    if attrs.channels is not None:
        expect(
            attrs.channels == w["O"],
            op_name,
            f"channels={attrs.channels} but the weight has {w['O']} outputs",
        )
    if attrs.kernel_size is not None:
        expect(
            tuple(attrs.kernel_size) == (w["H"], w["W"]),
            op_name,
            f"kernel_size={tuple(attrs.kernel_size)} but the weight's window is {(w['H'], w['W'])}",
        )
    sh, sw = attrs.strides
    dh, dw = attrs.dilation
    top, left, bottom, right = conv2d_padding(attrs, (w["H"], w["W"]))
    oh = (d["H"] + top + bottom - (w["H"] - 1) * dh - 1) // sh + 1
    ow = (d["W"] + left + right - (w["W"] - 1) * dw - 1) // sw + 1
    expect(
        oh >= 1 and ow >= 1,
        op_name,
        f"the {w['H']}x{w['W']} window (dilation {attrs.dilation}) does not "
        f"fit the {d['H']}x{d['W']} input with padding {attrs.padding}",
    )
    out_sizes = {"N": d["N"], "C": w["O"], "H": oh, "W": ow}
    out_layout = attrs.out_layout or attrs.data_layout
    out = TensorType(layout_shape(out_sizes, out_layout), out_dtype_of(attrs.out_dtype, data.dtype))
    return Solved(out, (data, weight))


def conv2d_reference(attrs: Conv2DAttrs, data: np.ndarray, weight: np.ndarray) -> np.ndarray:
    """numpy conv2d in any layout: converted to NCHW/OIHW, convolved per group, converted back."""
    x = convert_array(data, attrs.data_layout, "NCHW")
    w = convert_array(weight, attrs.kernel_layout, "OIHW")
    out_dtype = out_dtype_of(attrs.out_dtype, str(data.dtype))
    pads = conv2d_padding(attrs, w.shape[2:])
    groups, channels = attrs.groups, x.shape[1]
    if groups == 1:
        out = conv2d_nchw_python(x, w, attrs.strides, pads, attrs.dilation, out_dtype)
    elif groups == channels and w.shape[1] == 1:
        filt = w.reshape(channels, w.shape[0] // channels, *w.shape[2:])
        out = depthwise_conv2d_python_nchw(x, filt, attrs.strides, pads, attrs.dilation, out_dtype)
    else:
        cg, og = channels // groups, w.shape[0] // groups
        out = np.concatenate(
            [
                conv2d_nchw_python(
                    x[:, g * cg : (g + 1) * cg],
                    w[g * og : (g + 1) * og],
                    attrs.strides,
                    pads,
                    attrs.dilation,
                    out_dtype,
                )
                for g in range(groups)
            ],
            axis=1,
        )
    return convert_array(out, "NCHW", attrs.out_layout or attrs.data_layout)


for _name, _strategy_op, _attrs_type in (
    ("nn.conv2d", "conv2d", Conv2DAttrs),
    ("nn.contrib_conv2d_NCHWc", "conv2d_NCHWc", Conv2DNCHWcAttrs),
    ("nn.contrib_depthwise_conv2d_NCHWc", "depthwise_conv2d_NCHWc", Conv2DNCHWcAttrs),
):
    register_op(
        _name,
        ("data", "weight"),
        _relation,
        conv2d_reference,
        OpPattern.OUT_ELEMWISE_FUSABLE,
        _attrs_type,
        strategy_op=_strategy_op,
    )


def make_conv2d_attrs(
    strides: IntOrInts = (1, 1),
    padding: IntOrInts = (0, 0),
    dilation: IntOrInts = (1, 1),
    groups: int = 1,
    channels: int | None = None,
    kernel_size: IntOrInts | None = None,
    data_layout: str = "NCHW",
    kernel_layout: str = "OIHW",
    out_layout: str = "",
    out_dtype: str = "",
) -> Conv2DAttrs:
    """A :class:`Conv2DAttrs` from TVM's argument forms (ints for pairs, lists for tuples)."""
    return Conv2DAttrs(
        int_tuple(strides, 2, "strides"),
        int_tuple(padding, 2, "padding"),
        int_tuple(dilation, 2, "dilation"),
        int(groups),
        None if channels is None else int(channels),
        None if kernel_size is None else int_tuple(kernel_size, 2, "kernel_size"),
        data_layout,
        kernel_layout,
        out_layout,
        str(np.dtype(out_dtype)) if out_dtype else "",
    )


def conv2d(
    data: Expr,
    weight: Expr,
    strides: IntOrInts = (1, 1),
    padding: IntOrInts = (0, 0),
    dilation: IntOrInts = (1, 1),
    groups: int = 1,
    channels: int | None = None,
    kernel_size: IntOrInts | None = None,
    data_layout: str = "NCHW",
    kernel_layout: str = "OIHW",
    out_layout: str = "",
    out_dtype: str = "",
) -> Call:
    """2-D convolution (``relay.nn.conv2d``, TVM's arguments).

    Parameters
    ----------
    data, weight : Expr
        Input in ``data_layout`` and weight in ``kernel_layout`` (a weight without a shape gets
        ``(channels, in_channels / groups, *kernel_size)`` in that layout).
    strides, dilation : int or (int, int)
    padding : int, (pad_h, pad_w) or (top, left, bottom, right)
    groups : int
        ``groups == in_channels`` with one input channel per group is a depthwise convolution.
    channels : int, optional
        Output channels.
    kernel_size : int or (int, int), optional
    data_layout, kernel_layout, out_layout : str
        ``"NCHW"``/``"OIHW"``, or blocked ``"NCHW16c"``/``"OIHW16i16o"``; ``out_layout`` defaults to
        ``data_layout``.
    out_dtype : str
        Default: the data's dtype.

    Returns
    -------
    Call
    """
    args = (strides, padding, dilation, groups, channels, kernel_size, data_layout, kernel_layout)
    attrs = make_conv2d_attrs(*args, out_layout, out_dtype)
    return make_call("nn.conv2d", [data, weight], attrs)


def contrib_conv2d_nchwc(
    data: Expr,
    kernel: Expr,
    strides: IntOrInts = (1, 1),
    padding: IntOrInts = (0, 0),
    dilation: IntOrInts = (1, 1),
    groups: int = 1,
    channels: int | None = None,
    kernel_size: IntOrInts | None = None,
    data_layout: str = "NCHW8c",
    kernel_layout: str = "OIHW8i8o",
    out_layout: str = "",
    out_dtype: str = "",
) -> Call:
    """Blocked-layout convolution (``relay.nn.contrib_conv2d_nchwc``): ``data_layout`` ``NCHW{ic}c``,
    ``kernel_layout`` ``OIHW{ic}i{oc}o``, ``out_layout`` ``NCHW{oc}c``."""
    args = (strides, padding, dilation, groups, channels, kernel_size, data_layout, kernel_layout)
    attrs = Conv2DNCHWcAttrs(**asdict(make_conv2d_attrs(*args, out_layout, out_dtype)))
    return make_call("nn.contrib_conv2d_NCHWc", [data, kernel], attrs)


def contrib_depthwise_conv2d_nchwc(
    data: Expr,
    kernel: Expr,
    strides: IntOrInts = (1, 1),
    padding: IntOrInts = (0, 0),
    dilation: IntOrInts = (1, 1),
    groups: int = 1,
    channels: int | None = None,
    kernel_size: IntOrInts | None = None,
    data_layout: str = "NCHW8c",
    kernel_layout: str = "OIHW1i8o",
    out_layout: str = "",
    out_dtype: str = "",
) -> Call:
    """Blocked-layout depthwise convolution (``relay.nn.contrib_depthwise_conv2d_nchwc``): ``groups``
    equal to the channels, ``kernel_layout`` ``OIHW1i{oc}o``."""
    args = (strides, padding, dilation, groups, channels, kernel_size, data_layout, kernel_layout)
    attrs = Conv2DNCHWcAttrs(**asdict(make_conv2d_attrs(*args, out_layout, out_dtype)))
    return make_call("nn.contrib_depthwise_conv2d_NCHWc", [data, kernel], attrs)
