"""ONNX operators of vision decoders: ConvTranspose (2-D, NCHW) as ``nn.conv2d_transpose``."""

from __future__ import annotations

from ..ops.conv_transpose import conv2d_transpose
from ..ops.nn import bias_add
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
