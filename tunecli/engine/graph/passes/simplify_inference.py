"""SimplifyInference: batch norm as a per-channel scale and shift, dropout removed (inference only).

``batch_norm(x, gamma, beta, mean, var)[0]`` becomes ``x * scale + shift`` with
``scale = gamma / sqrt(var + eps)`` and ``shift = beta - mean * scale`` broadcast along the
channel axis (as graph calls on the statistics, which ``FoldConstant`` turns into constants);
``dropout(x)[0]`` becomes ``x``.  ``FoldScaleAxis`` then moves the scale into the weights of the
convolution or dense layer before it.
"""

from __future__ import annotations

from ..graph_expr import Call, Expr, Function, TupleGetItem, const
from ..op_registry import OPS, Op
from ..ops.transform import expand_dims
from ..traversal import ExprMutator
from ..type_infer import tensor_type_of
from .pass_infra import Pass, function_pass


class _Simplify(ExprMutator):
    def visit_tuple_getitem(self, item: TupleGetItem) -> Expr:
        value = self.visit(item.tuple_value)
        if isinstance(value, Call) and isinstance(value.op, Op) and item.index == 0:
            if value.op.name == "nn.dropout":
                return value.args[0]
            if value.op.name == "nn.batch_norm":
                return _batch_norm(value, item)
        return item if value is item.tuple_value else TupleGetItem(value, item.index)


def _batch_norm(call: Call, item: TupleGetItem) -> Expr:
    x, gamma, beta, mean, var = call.args
    attrs = call.attrs
    ndim = len(tensor_type_of(item).shape)
    axis = attrs.axis % ndim
    dtype = tensor_type_of(item).dtype
    std = Call(OPS.get("sqrt"), [var + const(attrs.epsilon, dtype)])
    scale = gamma / std if attrs.scale else const(1.0, dtype) / std
    shift = beta - mean * scale if attrs.center else const(0.0, dtype) - mean * scale
    trailing = ndim - axis - 1
    if trailing:
        scale, shift = expand_dims(scale, 1, trailing), expand_dims(shift, 1, trailing)
    return x * scale + shift


def simplify_inference(fn: Function) -> Function:
    """``fn`` with batch norms as scale-and-shift and dropouts removed."""
    return _Simplify().visit(fn)  # type: ignore[return-value]


def SimplifyInference() -> Pass:  # noqa: N802 - TVM's name
    """The pass (TVM's ``relay.transform.SimplifyInference()``)."""
    return function_pass("SimplifyInference", 0, simplify_inference)
