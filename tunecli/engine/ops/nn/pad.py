"""Padding: ``pad`` (TVM's ``topi.nn.pad``) and the padding-argument helpers of conv/pool."""

from __future__ import annotations

import numbers
from collections.abc import Sequence
from typing import Any

from tunecli.engine import te
from tunecli.engine.ir import expr as E
from tunecli.errors import ExprError


def pad(data: te.Tensor, pad_before: Sequence[int], pad_after: Sequence[int] | None = None,
        pad_value: Any = 0, name: str = "PadInput") -> te.Tensor:
    """Pad ``data`` with ``pad_value`` on both sides of every dimension.

    Parameters
    ----------
    data : te.Tensor
        n-D input.
    pad_before, pad_after : sequence of int
        Amount added before / after each dimension; ``pad_after`` defaults to ``pad_before``.
    pad_value : number or Expr
        Value of the border (cast to ``data.dtype``).
    name : str
        Name of the padding stage.

    Returns
    -------
    te.Tensor
        n-D tensor of shape ``data.shape[i] + pad_before[i] + pad_after[i]``.
    """
    n = len(data.shape)
    pad_after = list(pad_after) if pad_after else list(pad_before)
    pad_before = list(pad_before)
    if len(pad_before) != n or len(pad_after) != n:
        raise ExprError(f"pad {name}: pad_before/pad_after need {n} entries, got "
                        f"{len(pad_before)} and {len(pad_after)}")
    if any(int(p) < 0 for p in pad_before + pad_after):
        raise ExprError(f"pad {name}: negative padding {pad_before} / {pad_after}")
    out_shape = tuple(data.shape[i] + int(pad_before[i]) + int(pad_after[i]) for i in range(n))
    value = pad_value if isinstance(pad_value, E.Expr) else E.const(pad_value, data.dtype)
    value = E.cast(data.dtype, value)

    def _pad(*indices: Any) -> E.Expr:
        not_zero = []
        index_tuple = []
        for i in range(n):
            if int(pad_before[i]) == 0 and int(pad_after[i]) == 0:
                index_tuple.append(indices[i])
            else:
                index_tuple.append(indices[i] - int(pad_before[i]))
                if int(pad_before[i]) > 0:
                    not_zero.append(indices[i] >= int(pad_before[i]))
                if int(pad_after[i]) > 0:
                    not_zero.append(indices[i] < data.shape[i] + int(pad_before[i]))
        if not_zero:
            return te.if_then_else(te.all(*not_zero), data(*index_tuple), value)
        return data(*index_tuple)

    return te.compute(out_shape, _pad, name=name, tag="injective,pad")


def get_pad_tuple(padding: Any, kernel: Sequence[int]) -> tuple[int, int, int, int]:
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


def pair(value: Any, what: str) -> tuple[int, int]:
    """``value`` as an (h, w) pair: an int is used for both."""
    if _is_int(value):
        return int(value), int(value)
    if isinstance(value, (tuple, list)) and len(value) == 2 and all(_is_int(v) for v in value):
        return int(value[0]), int(value[1])
    raise ExprError(f"{what} must be an int or a pair of ints, got {value!r}")


def _is_int(value: Any) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)
