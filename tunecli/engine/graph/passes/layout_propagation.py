"""How a channel-blocked layout (``NCHW{b}c``, what a blocked convolution produces) passes through
the operators that consume it (TVM's ``InferCorrectLayout`` rules of ``AlterOpLayout``).

A :class:`LayoutRewriter` holds the rewritten graph: for each node of the original graph its new
expression and its layout (``"NCHW8c"``, or None when the value has its original layout).
:func:`propagate` rewrites one call whose inputs may be blocked:

* a unary elementwise operator (``nn.relu``, ``clip``, ``sigmoid``, ``cast``...) keeps the layout;
* a broadcasting binary operator (``add``, ``multiply``...) computes in the blocked layout of its
  first blocked operand: the other operand is transformed to it (a same-shaped tensor), re-laid
  out (a per-channel ``[C, 1, 1]`` constant becomes ``[1, C/b, 1, 1, b]``) or given a unit block
  axis (a tensor without channels); ``nn.bias_add`` on the channel axis becomes such an ``add``;
* ``nn.max_pool2d`` / ``nn.avg_pool2d`` and the global / adaptive pools compute in the blocked
  layout (their ``layout`` attribute says so);
* ``concatenate`` on the channel axis concatenates channel blocks when every input's channels
  divide into the first blocked input's block;
* every other operator (``nn.batch_flatten``, ``reshape``, ``nn.dense``, ``nn.softmax``, ``nn.pad``,
  ``layout_transform``...) gets its inputs back in their original layout.

Layout changes are ``layout_transform`` calls made by :meth:`LayoutRewriter.transform`: one per
value and destination layout, and a transform of a transform composes into one (or cancels).
"""

from __future__ import annotations

import re
from dataclasses import replace

from ..graph_expr import Call, Expr, Tuple
from ..op_registry import Op, OpPattern
from ..ops.broadcast import add
from ..ops.transform import layout_transform, reshape
from ..type_infer import tensor_type_of

_BLOCKED = re.compile(r"NCHW(\d+)c")
_BINARY = frozenset({"add", "subtract", "multiply", "divide", "maximum", "minimum", "power"})
_POOLS = frozenset({"nn.max_pool2d", "nn.avg_pool2d", "nn.global_avg_pool2d", "nn.global_max_pool2d",
                    "nn.adaptive_avg_pool2d"})


def channel_block(layout: str) -> int:
    """``b`` of a channel-blocked layout ``NCHW{b}c``."""
    m = _BLOCKED.fullmatch(layout)
    if m is None:
        raise ValueError(f"{layout!r} is not a channel-blocked NCHW layout")
    return int(m.group(1))


class LayoutRewriter:
    """The rewritten graph: each original node's new expression and layout (see the module docstring)."""

    def __init__(self) -> None:
        self._new: dict[Expr, tuple[Expr, str | None]] = {}
        self._transforms: dict[tuple[Expr, str], Expr] = {}

    def set(self, old: Expr, new: Expr, layout: str | None = None) -> None:
        """Record ``new`` (in ``layout``; None: the original one) as the rewritten ``old``."""
        self._new[old] = (new, layout)

    def layout_of(self, old: Expr) -> str | None:
        """The blocked layout of the rewritten ``old``, None when it has its original layout."""
        return self._new[old][1]

    def original(self, old: Expr) -> Expr:
        """The rewritten ``old`` in its original layout (transformed back to NCHW when blocked)."""
        new, layout = self._new[old]
        return new if layout is None else self.transform(new, layout, "NCHW")

    def as_layout(self, old: Expr, layout: str) -> Expr:
        """The rewritten 4-D (NCHW) value ``old`` in ``layout``."""
        new, current = self._new[old]
        return self.transform(new, current or "NCHW", layout)

    def transform(self, expr: Expr, src: str, dst: str) -> Expr:
        """``expr`` (in ``src``) in ``dst``: itself, the input of a transform it undoes, or one
        ``layout_transform`` (shared by every consumer wanting ``dst``)."""
        if src == dst:
            return expr
        key = (expr, dst)
        if key not in self._transforms:
            if _is_layout_transform(expr) and expr.attrs.dst_layout == src:  # type: ignore[attr-defined]
                inner, inner_src = expr.args[0], expr.attrs.src_layout  # type: ignore[attr-defined]
                self._transforms[key] = inner if inner_src == dst else self.transform(inner, inner_src, dst)
            else:
                self._transforms[key] = layout_transform(expr, src, dst)
        return self._transforms[key]

    def restored(self, call: Call) -> Call:
        """``call`` on its inputs in their original layouts (the call itself when none changed)."""
        args = [self.original(a) for a in call.args]
        if all(n is o for n, o in zip(args, call.args, strict=True)):
            return call
        return Call(call.op, args, call.attrs)


def _is_layout_transform(expr: Expr) -> bool:
    return isinstance(expr, Call) and isinstance(expr.op, Op) and expr.op.name == "layout_transform"


def propagate(rw: LayoutRewriter, call: Call) -> tuple[Expr, str | None]:
    """The rewritten operator ``call`` and its layout (see the module docstring)."""
    op: Op = call.op  # type: ignore[assignment]
    if op.name == "concatenate":
        return _concatenate(rw, call)
    layouts = [rw.layout_of(a) if not isinstance(a, Tuple) else None for a in call.args]
    layout = next((lay for lay in layouts if lay is not None), None)
    if layout is None:
        return rw.restored(call), None
    if op.pattern == OpPattern.ELEMWISE and len(call.args) == 1:
        return Call(op, [rw.as_layout(call.args[0], layout)], call.attrs), layout
    if op.name in _BINARY and len(tensor_type_of(call).shape) == 4:
        return _broadcast(rw, call, layout)
    if op.name == "nn.bias_add" and call.attrs.axis in (1, -3) and layouts[0] is not None:
        data, bias = call.args
        return add(rw.as_layout(data, layouts[0]), _channel_operand(rw, bias, layouts[0])), layouts[0]
    if op.name in _POOLS and call.attrs.layout == "NCHW" and call.attrs.out_layout in ("", "NCHW"):
        attrs = replace(call.attrs, layout=layout, out_layout="")
        return Call(op, [rw.as_layout(call.args[0], layout)], attrs), layout
    return rw.restored(call), None


def _broadcast(rw: LayoutRewriter, call: Call, layout: str) -> tuple[Expr, str | None]:
    """A binary operator in ``layout``: each operand in ``layout``, or re-shaped to broadcast against it."""
    channels = tensor_type_of(call).shape[1]
    args = []
    for a in call.args:
        shape = tuple(tensor_type_of(a).shape)
        if len(shape) == 4 and shape[1] == channels:
            args.append(rw.as_layout(a, layout))
        elif len(shape) == 0:
            args.append(rw.original(a))
        elif len(shape) <= 4 and ((1,) * (4 - len(shape)) + shape)[1] in (1, channels):
            args.append(_channel_operand(rw, a, layout))
        else:
            return rw.restored(call), None
    return Call(call.op, args, call.attrs), layout


def _channel_operand(rw: LayoutRewriter, old: Expr, layout: str) -> Expr:
    """A value broadcasting against NCHW data (``[C]`` of a bias, ``[C, 1, 1]``, ``[1, 1, H, W]``...)
    reshaped to broadcast against the data in ``layout``."""
    shape = tuple(tensor_type_of(old).shape)
    expr = rw.original(old)
    if len(shape) == 1:  # a bias: one value per channel
        shape4 = (1, shape[0], 1, 1)
    else:
        shape4 = (1,) * (4 - len(shape)) + shape
    if shape4[1] == 1:
        return reshape(expr, (*shape4, 1))
    if shape4 != shape:
        expr = reshape(expr, shape4)
    return rw.transform(expr, "NCHW", layout)


def _concatenate(rw: LayoutRewriter, call: Call) -> tuple[Expr, str | None]:
    """Channel blocks concatenated when every input divides into the first blocked input's block."""
    (tup,) = call.args
    if not isinstance(tup, Tuple):
        return rw.restored(call), None
    fields = tup.fields
    layout = next((rw.layout_of(f) for f in fields if rw.layout_of(f) is not None), None)
    ndim = len(tensor_type_of(call).shape)
    if (layout is not None and ndim == 4 and call.attrs.axis % 4 == 1
            and all(tensor_type_of(f).shape[1] % channel_block(layout) == 0 for f in fields)):
        return Call(call.op, [Tuple([rw.as_layout(f, layout) for f in fields])], call.attrs), layout
    new = [rw.original(f) for f in fields]
    if all(n is o for n, o in zip(new, fields, strict=True)):
        return call, None
    return Call(call.op, [Tuple(new)], call.attrs), None
