"""ONNX operators of vision decoders: ConvTranspose (2-D, NCHW) as ``nn.conv2d_transpose`` and
Resize (nearest and linear, the last two axes of NCHW data) as ``image.resize2d``."""

from __future__ import annotations

import math

import numpy as np

from ..ops.conv_transpose import conv2d_transpose
from ..ops.nn import bias_add
from ..ops.resize import COORDINATE_MODES, resize2d
from .onnx_node import NodeContext
from .onnx_table import Value, converter


def _transpose_pads(
    ctx: NodeContext, in_hw: tuple[int, ...], kernel: tuple[int, ...], strides: tuple[int, ...],
    dilations: tuple[int, ...], output_padding: tuple[int, ...],
) -> tuple[int, int, int, int]:
    """``(top, left, bottom, right)`` from ``pads``, or from ``output_shape`` / ``auto_pad`` as the
    ONNX specification derives them."""
    auto_pad = ctx.attr("auto_pad", "NOTSET")
    if auto_pad not in ("NOTSET", "VALID", "SAME_UPPER", "SAME_LOWER"):
        raise ctx.error(f"auto_pad {auto_pad!r}; supported: NOTSET, VALID, SAME_UPPER, SAME_LOWER")
    if "output_shape" not in ctx.attrs and auto_pad in ("NOTSET", "VALID"):
        pads = ctx.int_list("pads", (0, 0, 0, 0)) if auto_pad == "NOTSET" else (0, 0, 0, 0)
        if len(pads) != 4 or min(pads) < 0:
            raise ctx.error(f"pads {pads}: expected 4 non-negative values (top, left, bottom, right)")
        return pads[0], pads[1], pads[2], pads[3]
    same = tuple(s * st for s, st in zip(in_hw, strides, strict=True))
    wanted = ctx.int_list("output_shape", ())[-2:] or same
    begins, ends = [], []
    sizes = zip(in_hw, kernel, strides, dilations, output_padding, wanted, strict=True)
    for size, k, s, d, extra, out in sizes:
        total = s * (size - 1) + extra + (k - 1) * d + 1 - out
        if total < 0:
            raise ctx.error(f"output_shape {tuple(wanted)} is larger than the full output")
        small, large = total // 2, total - total // 2
        begins.append(small if auto_pad == "SAME_UPPER" else large)
        ends.append(large if auto_pad == "SAME_UPPER" else small)
    return begins[0], begins[1], ends[0], ends[1]


@converter("ConvTranspose")
def _conv_transpose(ctx: NodeContext) -> Value:
    data_shape, weight_shape = ctx.shape(0), ctx.shape(1)
    if len(data_shape) != 4 or len(weight_shape) != 4:
        raise ctx.error(f"only 2-D operations on NCHW data are supported; shapes {data_shape} and "
                        f"{weight_shape}")
    kernel = weight_shape[2:]
    if ctx.int_list("kernel_shape", kernel) != kernel:
        raise ctx.error(f"kernel_shape {ctx.attr('kernel_shape')} differs from the weight's {kernel}")
    pairs = {}
    for key, default in (("strides", 1), ("dilations", 1), ("output_padding", 0)):
        pairs[key] = ctx.int_list(key, (default, default))
        if len(pairs[key]) != 2:
            raise ctx.error(f"{key} {pairs[key]}: expected 2 values for a 2-D operation")
    groups = int(ctx.attr("group", 1))
    pads = _transpose_pads(ctx, data_shape[2:], kernel, pairs["strides"], pairs["dilations"],
                           pairs["output_padding"])
    out = conv2d_transpose(ctx.expr(0), ctx.expr(1), strides=pairs["strides"], padding=pads,
                           dilation=pairs["dilations"], output_padding=pairs["output_padding"], groups=groups,
                           channels=weight_shape[1] * groups, kernel_size=kernel)
    return bias_add(out, ctx.expr(2), axis=1) if ctx.has_input(2) else out


_RESIZE_METHODS = {"nearest": "nearest_neighbor", "linear": "linear"}


def _resize_targets(ctx: NodeContext, shape: tuple[int, ...]) -> tuple[tuple[int, int], tuple[float, float]]:
    """The output height and width, and the scale factors of the coordinate mapping (0: size ratio)."""
    ndim = len(shape)
    axes = tuple(ctx.axis(a, ndim, "axes entry") for a in ctx.int_list("axes", range(ndim)))
    scales = np.asarray(ctx.array(2, "scales"), dtype=np.float64).reshape(-1) if ctx.has_input(2) else None
    sizes = np.asarray(ctx.array(3, "sizes"), dtype=np.int64).reshape(-1) if ctx.has_input(3) else None
    full_scale, full_size = [1.0] * ndim, list(shape)
    if sizes is not None and sizes.size:
        if ctx.attr("keep_aspect_ratio_policy", "stretch") != "stretch":
            raise ctx.error("keep_aspect_ratio_policy other than 'stretch' is not supported")
        if sizes.size != len(axes):
            raise ctx.error(f"sizes {sizes.tolist()} must have one value per axis ({len(axes)})")
        for a, v in zip(axes, sizes, strict=True):
            full_size[a], full_scale[a] = int(v), 0.0
    elif scales is not None and scales.size:
        if scales.size != len(axes) or np.any(scales <= 0):
            raise ctx.error(f"scales {scales.tolist()} must have one positive value per axis ({len(axes)})")
        for a, v in zip(axes, scales, strict=True):
            full_size[a], full_scale[a] = int(math.floor(shape[a] * v)), float(v)
    else:
        raise ctx.error("one of scales and sizes must be given")
    if ndim != 4 or full_size[:2] != list(shape[:2]):
        raise ctx.error(f"only the last two axes of NCHW data are resized; {shape} -> {tuple(full_size)}")
    return (full_size[2], full_size[3]), (full_scale[2], full_scale[3])


@converter("Resize", since=11)
def _resize(ctx: NodeContext) -> Value:
    mode = ctx.attr("mode", "nearest")
    if mode not in _RESIZE_METHODS:
        raise ctx.error(f"mode {mode!r}; supported: {', '.join(_RESIZE_METHODS)}")
    coordinates = ctx.attr("coordinate_transformation_mode", "half_pixel")
    if coordinates not in COORDINATE_MODES:
        raise ctx.error(
            f"coordinate_transformation_mode {coordinates!r}; supported: {', '.join(COORDINATE_MODES)}"
        )
    if ctx.attr("antialias", 0):
        raise ctx.error("antialias 1 is not supported")
    size, scale = _resize_targets(ctx, ctx.shape(0))
    return resize2d(ctx.expr(0), size, scale, method=_RESIZE_METHODS[mode],
                    coordinate_transformation_mode=coordinates,
                    rounding_method=ctx.attr("nearest_mode", "round_prefer_floor"))
