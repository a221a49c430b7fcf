"""Layer normalisation: ``nn.layer_norm`` (pattern COMM_REDUCE, so a residual add before it fuses
into its kernel)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..graph_expr import Call, Expr
from ..op_registry import Attrs, OpPattern, Solved, expect, tensor_arg
from ..types import TensorType, Type
from .define import make_call, normalize_axis, register_op


@dataclass(frozen=True)
class LayerNormAttrs(Attrs):
    """``nn.layer_norm``: the normalised axis, epsilon, and whether beta / gamma are used."""

    axis: int = -1
    epsilon: float = 1e-5
    center: bool = True
    scale: bool = True


def _relation(op_name: str, arg_types: Sequence[Type | None], attrs: LayerNormAttrs) -> Solved:
    data = tensor_arg(op_name, arg_types, 0, "data")
    expect(data.dtype.startswith("float"), op_name, f"data must be floating point, got {data.dtype}")
    axis = normalize_axis(op_name, attrs.axis, data.ndim)
    vec = TensorType((data.shape[axis],), data.dtype)
    for i, name in enumerate(("gamma", "beta"), start=1):
        if arg_types[i] is not None:
            given = tensor_arg(op_name, arg_types, i, name)
            expect(given == vec, op_name, f"{name} must be {vec} for data {data} on axis {attrs.axis}, "
                   f"got {given}")
    return Solved(data, (data, vec, vec))


def _reference(attrs: LayerNormAttrs, data: np.ndarray, gamma: np.ndarray, beta: np.ndarray) -> np.ndarray:
    axis = attrs.axis % data.ndim
    x = data.astype(np.float64)
    mean = x.mean(axis=axis, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=axis, keepdims=True)
    out = (x - mean) / np.sqrt(var + attrs.epsilon)
    shape = [1] * data.ndim
    shape[axis] = -1
    if attrs.scale:
        out = out * gamma.reshape(shape)
    if attrs.center:
        out = out + beta.reshape(shape)
    return out.astype(data.dtype)


register_op(
    "nn.layer_norm", ("data", "gamma", "beta"), _relation, _reference, OpPattern.COMM_REDUCE, LayerNormAttrs
)


def layer_norm(
    data: Expr,
    gamma: Expr,
    beta: Expr,
    axis: int = -1,
    epsilon: float = 1e-5,
    center: bool = True,
    scale: bool = True,
) -> Call:
    """``(data - mean) / sqrt(var + epsilon) * gamma + beta`` with the mean and (biased) variance
    taken along ``axis`` (``relay.nn.layer_norm``)."""
    attrs = LayerNormAttrs(int(axis), float(epsilon), bool(center), bool(scale))
    return make_call("nn.layer_norm", [data, gamma, beta], attrs)
