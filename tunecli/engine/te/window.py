"""The shape rule of 2-D window ops (convolution, pooling): padding arguments as TVM writes them,
``(h, w)`` pairs and the output height and width.

Used where kernels and their numpy references are defined (``engine.ops``), where a network's
types are inferred (``engine.graph.ops``) and where a workload's arithmetic is read from its
serialized arguments (``engine.task.workload_flop``).
"""

from __future__ import annotations

import numbers
from collections.abc import Sequence
from typing import TypeAlias

from tunecli.errors import ExprError

#: An int for both axes, or an (h, w) pair.
IntPair: TypeAlias = "int | Sequence[int]"
#: A padding: an int, (pad_h, pad_w), (top, left, bottom, right), "VALID" or "SAME".
Padding: TypeAlias = "int | Sequence[int] | str"


def conv2d_output_shape(in_hw: tuple[int, int], kernel_hw: tuple[int, int], stride: IntPair, padding: Padding,
                        dilation: IntPair) -> tuple[int, int, tuple[int, int, int, int]]:
    """Output height/width and ``(top, left, bottom, right)`` padding of a 2-D window op."""
    return window_output_shape(in_hw, kernel_hw, stride, padding, dilation, ceil_mode=False)


def pool2d_output_shape(in_hw: tuple[int, int], kernel_hw: IntPair, stride: IntPair, padding: Padding,
                        dilation: IntPair,
                        ceil_mode: bool = False) -> tuple[int, int, tuple[int, int, int, int]]:
    """Output height/width and ``(top, left, bottom, right)`` padding of a 2-D pool (TVM's
    ``pool2d``): the convolution's rule, with ``ceil_mode`` rounding the output size up (the last
    windows may then hang over the bottom/right edge, past the declared padding)."""
    return window_output_shape(in_hw, pair(kernel_hw, "kernel"), stride, padding, dilation, ceil_mode)


def window_output_shape(in_hw: tuple[int, int], kernel_hw: tuple[int, int], stride: IntPair, padding: Padding,
                        dilation: IntPair, ceil_mode: bool) -> tuple[int, int, tuple[int, int, int, int]]:
    """The rule behind :func:`conv2d_output_shape` and :func:`pool2d_output_shape`."""
    stride_h, stride_w = pair(stride, "stride")
    dilation_h, dilation_w = pair(dilation, "dilation")
    for what, value, (h, w) in (("stride", stride, (stride_h, stride_w)),
                                ("dilation", dilation, (dilation_h, dilation_w))):
        if h < 1 or w < 1:
            raise ExprError(f"{what} must be at least 1, got {value!r}")
    dk_h = (kernel_hw[0] - 1) * dilation_h + 1
    dk_w = (kernel_hw[1] - 1) * dilation_w + 1
    pads = get_pad_tuple(padding, (dk_h, dk_w))
    if min(pads) < 0:
        raise ExprError(f"padding must not be negative, got {padding!r}")
    up_h, up_w = (stride_h - 1, stride_w - 1) if ceil_mode else (0, 0)
    out_h = (in_hw[0] - dk_h + pads[0] + pads[2] + up_h) // stride_h + 1
    out_w = (in_hw[1] - dk_w + pads[1] + pads[3] + up_w) // stride_w + 1
    if out_h < 1 or out_w < 1:
        raise ExprError(f"window {tuple(kernel_hw)} (dilation {dilation}) does not fit input "
                        f"{tuple(in_hw)} with padding {padding}")
    return out_h, out_w, pads


def get_pad_tuple(padding: Padding, kernel: Sequence[int]) -> tuple[int, int, int, int]:
    """Normalise a conv/pool padding argument to ``(top, left, bottom, right)``.

    Parameters
    ----------
    padding : int, (pad_h, pad_w), (top, left, bottom, right), "VALID" or "SAME"
        As TVM's ``get_pad_tuple``: a 2-tuple pads both sides of H and W by that amount.
    kernel : (int, int)
        (Dilated) kernel height and width, used by "SAME".

    Returns
    -------
    tuple of int
        ``(pad_top, pad_left, pad_down, pad_right)``.
    """
    if isinstance(padding, (tuple, list)):
        if len(padding) == 2:
            pad_h, pad_w = int(padding[0]) * 2, int(padding[1]) * 2
        elif len(padding) == 4:
            return int(padding[0]), int(padding[1]), int(padding[2]), int(padding[3])
        else:
            raise ExprError(f"padding must have 2 or 4 entries, got {padding!r}")
    elif isinstance(padding, int):
        pad_h = pad_w = padding * 2
    elif padding == "VALID":
        pad_h = pad_w = 0
    elif padding == "SAME":
        pad_h, pad_w = int(kernel[0]) - 1, int(kernel[1]) - 1
    else:
        raise ExprError(f"unknown padding option {padding!r}")
    pad_top = (pad_h + 1) // 2
    pad_left = (pad_w + 1) // 2
    return pad_top, pad_left, pad_h - pad_top, pad_w - pad_left


def pair(value: IntPair, what: str) -> tuple[int, int]:
    """``value`` as an (h, w) pair: an int is used for both."""
    if _is_int(value):
        return int(value), int(value)
    if isinstance(value, (tuple, list)) and len(value) == 2 and all(_is_int(v) for v in value):
        return int(value[0]), int(value[1])
    raise ExprError(f"{what} must be an int or a pair of ints, got {value!r}")


def _is_int(value: object) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)
