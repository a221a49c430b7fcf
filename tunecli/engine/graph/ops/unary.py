"""Elementwise operators of one tensor: nn.relu, nn.leaky_relu, clip, sigmoid, tanh, exp, log, sqrt,
rsqrt, erf, abs, negative, cast (pattern ELEMWISE)."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from tunecli.engine.ops.reference import relu_python

from ..graph_expr import Call, Expr
from ..op_registry import Attrs, OpPattern, tensor_arg
from ..types import TensorType, Type
from .define import make_call, register_op, same_type_relation


@dataclass(frozen=True)
class ClipAttrs(Attrs):
    """``clip``: the bounds."""

    a_min: float = 0.0
    a_max: float = 0.0


@dataclass(frozen=True)
class LeakyReluAttrs(Attrs):
    """``nn.leaky_relu``: the slope below zero."""

    alpha: float = 0.01


@dataclass(frozen=True)
class CastAttrs(Attrs):
    """``cast``: the target dtype."""

    dtype: str = "float32"


def _float_op(fn: Callable[[np.ndarray], np.ndarray]) -> Callable[[Attrs, np.ndarray], np.ndarray]:
    def reference(attrs: Attrs, x: np.ndarray) -> np.ndarray:
        return fn(x).astype(x.dtype, copy=False)

    reference.__name__ = fn.__name__
    return reference


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-x.astype(np.float64)))


def _rsqrt(x: np.ndarray) -> np.ndarray:
    return 1.0 / np.sqrt(x.astype(np.float64))


def _erf(x: np.ndarray) -> np.ndarray:
    return np.vectorize(math.erf, otypes=[np.float64])(x.astype(np.float64))


def _relu(attrs: Attrs, x: np.ndarray) -> np.ndarray:
    return relu_python(x)


def _clip(attrs: ClipAttrs, x: np.ndarray) -> np.ndarray:
    return np.clip(x, attrs.a_min, attrs.a_max).astype(x.dtype, copy=False)


def _leaky_relu(attrs: LeakyReluAttrs, x: np.ndarray) -> np.ndarray:
    return np.where(x > 0, x, x * attrs.alpha).astype(x.dtype, copy=False)


def _cast_relation(op_name: str, arg_types: Sequence[Type | None], attrs: CastAttrs) -> Type:
    return TensorType(tensor_arg(op_name, arg_types, 0, "data").shape, attrs.dtype)


def _cast(attrs: CastAttrs, x: np.ndarray) -> np.ndarray:
    return x.astype(attrs.dtype)


register_op("nn.relu", ("data",), same_type_relation, _relu, OpPattern.ELEMWISE)
register_op("nn.leaky_relu", ("data",), same_type_relation, _leaky_relu, OpPattern.ELEMWISE, LeakyReluAttrs)
register_op("clip", ("a",), same_type_relation, _clip, OpPattern.ELEMWISE, ClipAttrs)
register_op("sigmoid", ("data",), same_type_relation, _float_op(_sigmoid), OpPattern.ELEMWISE)
register_op("tanh", ("data",), same_type_relation, _float_op(np.tanh), OpPattern.ELEMWISE)
register_op("exp", ("data",), same_type_relation, _float_op(np.exp), OpPattern.ELEMWISE)
register_op("sqrt", ("data",), same_type_relation, _float_op(np.sqrt), OpPattern.ELEMWISE)
register_op("log", ("data",), same_type_relation, _float_op(np.log), OpPattern.ELEMWISE)
register_op("rsqrt", ("data",), same_type_relation, _float_op(_rsqrt), OpPattern.ELEMWISE)
register_op("erf", ("data",), same_type_relation, _float_op(_erf), OpPattern.ELEMWISE)
register_op("abs", ("data",), same_type_relation, _float_op(np.abs), OpPattern.ELEMWISE)
register_op("negative", ("data",), same_type_relation, _float_op(np.negative), OpPattern.ELEMWISE)
register_op("cast", ("data",), _cast_relation, _cast, OpPattern.ELEMWISE, CastAttrs)


def relu(data: Expr) -> Call:
    """``max(data, 0)`` (``relay.nn.relu``)."""
    return make_call("nn.relu", [data])


def leaky_relu(data: Expr, alpha: float = 0.01) -> Call:
    """``data`` where positive, else ``alpha * data`` (``relay.nn.leaky_relu``)."""
    return make_call("nn.leaky_relu", [data], LeakyReluAttrs(float(alpha)))


def clip(a: Expr, a_min: float, a_max: float) -> Call:
    """``min(max(a, a_min), a_max)`` (``relay.clip``)."""
    return make_call("clip", [a], ClipAttrs(float(a_min), float(a_max)))


def sigmoid(data: Expr) -> Call:
    """``1 / (1 + exp(-data))`` (``relay.sigmoid``)."""
    return make_call("sigmoid", [data])


def tanh(data: Expr) -> Call:
    """Hyperbolic tangent (``relay.tanh``)."""
    return make_call("tanh", [data])


def exp(data: Expr) -> Call:
    """``e ** data`` (``relay.exp``)."""
    return make_call("exp", [data])


def sqrt(data: Expr) -> Call:
    """Square root (``relay.sqrt``)."""
    return make_call("sqrt", [data])


def log(data: Expr) -> Call:
    """Natural logarithm (``relay.log``)."""
    return make_call("log", [data])


def rsqrt(data: Expr) -> Call:
    """``1 / sqrt(data)`` (``relay.rsqrt``)."""
    return make_call("rsqrt", [data])


def erf(data: Expr) -> Call:
    """The Gauss error function (``relay.erf``)."""
    return make_call("erf", [data])


def abs(data: Expr) -> Call:  # noqa: A001
    """Absolute value (``relay.abs``)."""
    return make_call("abs", [data])


def negative(data: Expr) -> Call:
    """``-data`` (``relay.negative``)."""
    return make_call("negative", [data])


def cast(data: Expr, dtype: str) -> Call:
    """``data`` converted to ``dtype`` (``relay.cast``)."""
    return make_call("cast", [data], CastAttrs(str(np.dtype(dtype))))
