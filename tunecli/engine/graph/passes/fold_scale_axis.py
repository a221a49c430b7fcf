"""FoldScaleAxis (backward): a per-output-channel constant scale after a convolution or dense layer
is multiplied into its constant weight, so ``conv(x, W) * s`` becomes ``conv(x, W * s)``.

This is where a batch norm after a convolution disappears into the convolution's weights (after
``SimplifyInference`` made it a scale and a shift); the shift stays, as a bias the fused kernel
adds.  Only a convolution or dense layer with no other consumer, a constant weight in OIHW
(``[units, K]``) form and a constant scale that varies along the output channels only is folded.
"""

from __future__ import annotations

import numpy as np

from ..graph_expr import Call, Constant, Expr, Function
from ..op_registry import Op
from ..traversal import ExprMutator, children, post_order
from ..type_infer import tensor_type_of
from .pass_infra import Pass, function_pass


def _use_counts(fn: Function) -> dict[Expr, int]:
    uses: dict[Expr, int] = {}
    for node in post_order(fn.body, into_functions=False):
        for c in children(node):
            uses[c] = uses.get(c, 0) + 1
    uses[fn.body] = uses.get(fn.body, 0) + 1
    return uses


def _channel_scale(op_name: str, out_shape: tuple[int, ...], scale: np.ndarray) -> np.ndarray | None:
    """The scale as one factor per output channel, or None when it varies along other axes."""
    if scale.ndim > len(out_shape):
        return None
    axis = 1 if op_name == "nn.conv2d" else len(out_shape) - 1
    channels = out_shape[axis]
    full = (1,) * (len(out_shape) - scale.ndim) + scale.shape
    if any(s != 1 for k, s in enumerate(full) if k != axis):
        return None
    if full[axis] not in (1, channels):
        return None
    return np.broadcast_to(scale.reshape(full[axis]), (channels,))


class _FoldScale(ExprMutator):
    def __init__(self, uses: dict[Expr, int]):
        super().__init__()
        self.uses = uses

    def visit_call(self, call: Call) -> Expr:
        new = super().visit_call(call)
        if not (isinstance(new, Call) and isinstance(new.op, Op) and new.op.name == "multiply"):
            return new
        for anchor_old, scale in ((call.args[0], new.args[1]), (call.args[1], new.args[0])):
            anchor = self.visit(anchor_old)
            if not isinstance(scale, Constant) or self.uses.get(anchor_old, 0) != 1:
                continue
            folded = _fold(anchor, scale.data, tensor_type_of(anchor_old).shape)
            if folded is not None:
                return folded
        return new


def _fold(anchor: Expr, scale: np.ndarray, out_shape: tuple[int, ...]) -> Call | None:
    if not (
        isinstance(anchor, Call)
        and isinstance(anchor.op, Op)
        and anchor.op.name in ("nn.conv2d", "nn.dense")
        and isinstance(anchor.args[1], Constant)
    ):
        return None
    if anchor.op.name == "nn.conv2d" and (
        anchor.attrs.kernel_layout != "OIHW" or anchor.attrs.data_layout != "NCHW"
    ):
        return None
    per_channel = _channel_scale(anchor.op.name, out_shape, scale)
    weight = anchor.args[1].data
    if per_channel is None or per_channel.dtype != weight.dtype or weight.shape[0] != per_channel.shape[0]:
        return None
    new_weight = weight * per_channel.reshape((-1,) + (1,) * (weight.ndim - 1))
    return Call(anchor.op, [anchor.args[0], Constant(new_weight.astype(weight.dtype))], anchor.attrs)


def fold_scale_axis(fn: Function) -> Function:
    """``fn`` with channel scales after convolutions and dense layers folded into their weights."""
    return _FoldScale(_use_counts(fn)).visit(fn)  # type: ignore[return-value]


def FoldScaleAxis() -> Pass:  # noqa: N802 - TVM's name
    """The pass (TVM's ``relay.transform.FoldScaleAxis()``; the backward direction)."""
    return function_pass("FoldScaleAxis", 3, fold_scale_axis)
