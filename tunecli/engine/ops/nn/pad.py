"""Padding: ``pad`` (TVM's ``topi.nn.pad``); the padding arguments of conv/pool are read by
:mod:`tunecli.engine.te.window`."""

from __future__ import annotations

from collections.abc import Sequence

from tunecli.engine import te
from tunecli.engine.ir import expr as E
from tunecli.errors import ExprError


def pad(data: te.Tensor, pad_before: Sequence[int], pad_after: Sequence[int] | None = None,
        pad_value: E.ExprLike = 0, name: str = "PadInput") -> te.Tensor:
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

    def _pad(*indices: E.Expr) -> E.Expr:
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
