"""Tensor-expression definitions of the pooling and reduction operators (their ``FTVMCompute``).

Max/average pooling (windowed, global, adaptive, in any ``NCHW[x]c`` layout), ``nn.softmax``
and ``nn.log_softmax`` (along any axis), ``nn.layer_norm`` and the ``sum``/``mean``/``max``/``min``
reductions.
``op_compute.compute_of`` loads them with the other operators' definitions.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from tunecli.engine import te
from tunecli.engine.ir import expr as E
from tunecli.engine.ops.nn import pool2d
from tunecli.errors import GraphError

from .layout import parse_layout
from .op_registry import COMPUTE_ATTR, OPS, Compute
from .types import TensorType


def _set_compute(name: str, fn: Compute) -> None:
    OPS.set_attr(name, COMPUTE_ATTR, fn)


def _pool(kind: str) -> Compute:
    def compute(attrs: Any, inputs: Sequence[te.Tensor], out: TensorType) -> te.Tensor:
        (x,) = inputs
        return pool2d(
            x,
            attrs.pool_size,
            attrs.strides,
            attrs.dilation,
            attrs.padding,
            kind,
            attrs.ceil_mode,
            attrs.layout,
            attrs.out_layout,
            attrs.count_include_pad,
        )

    return compute


def _global_pool(kind: str) -> Compute:
    return lambda attrs, inputs, out: _adaptive_pool(kind, attrs, inputs, out)


for _name, _compute in {
    "nn.max_pool2d": _pool("max"),
    "nn.avg_pool2d": _pool("avg"),
    "nn.global_avg_pool2d": _global_pool("avg"),
    "nn.global_max_pool2d": _global_pool("max"),
    "nn.adaptive_avg_pool2d": _global_pool("avg"),
}.items():
    _set_compute(_name, _compute)


def _adaptive_pool(kind: str, attrs: Any, inputs: Sequence[te.Tensor], out: TensorType) -> te.Tensor:
    (x,) = inputs
    layout = parse_layout(attrs.layout)
    blocked = len(layout) == 5 and [a for a, _ in layout] == list("NCHWc")
    if (attrs.layout != "NCHW" and not blocked) or attrs.out_layout not in ("", attrs.layout):
        raise GraphError(
            f"global pooling: only the NCHW and NCHW{{b}}c layouts are compiled, got {attrs.layout!r}"
        )
    h, w = x.shape[2:4]
    oh, ow = out.shape[2:4]
    if h % oh or w % ow:
        raise GraphError(f"adaptive pooling: output {oh}x{ow} must divide the input {h}x{w}")
    kh, kw = h // oh, w // ow
    rh, rw = te.reduce_axis((0, kh), name="rh"), te.reduce_axis((0, kw), name="rw")
    if kind == "max":
        return te.compute(
            out.shape,
            lambda b, ch, y, z, *v: te.max(x[(b, ch, y * kh + rh, z * kw + rw, *v)], axis=[rh, rw]),
            name="T_global_max",
            tag="global_pool_max",
        )
    total = te.compute(
        out.shape,
        lambda b, ch, y, z, *v: te.sum(x[(b, ch, y * kh + rh, z * kw + rw, *v)], axis=[rh, rw]),
        name="T_global_sum",
        tag="global_pool_sum",
    )
    return te.compute(
        out.shape,
        lambda *i: total(*i) / E.const(kh * kw, x.dtype),
        name="T_global_avg",
        tag="elemwise,pool_avg",
    )


def _softmax_stages(x: te.Tensor, axis: int) -> tuple[Any, Any, Any]:
    """``max``, ``exp(x - max)`` and its sum along ``axis`` (the stages softmax and log_softmax share)."""
    shape = tuple(x.shape)
    k1, k2 = te.reduce_axis((0, shape[axis]), name="k1"), te.reduce_axis((0, shape[axis]), name="k2")
    red_shape = shape[:axis] + shape[axis + 1 :]

    def at(i: Sequence[E.Expr], k: Any) -> list[Any]:
        return [*i[:axis], k, *i[axis:]]

    mx = te.compute(red_shape, lambda *i: te.max(x(*at(i, k1)), axis=[k1]), name="T_softmax_maxelem")
    ex = te.compute(shape, lambda *i: te.exp(x(*i) - mx(*(i[:axis] + i[axis + 1 :]))), name="T_softmax_exp")
    sm = te.compute(red_shape, lambda *i: te.sum(ex(*at(i, k2)), axis=[k2]), name="T_softmax_expsum")
    return mx, ex, sm


@OPS.register_attr(COMPUTE_ATTR, "nn.softmax")
def _softmax(attrs: Any, inputs: Sequence[te.Tensor], out: TensorType) -> te.Tensor:
    (x,) = inputs
    axis = attrs.axis % len(x.shape)
    _, ex, sm = _softmax_stages(x, axis)
    return te.compute(x.shape, lambda *i: ex(*i) / sm(*(i[:axis] + i[axis + 1 :])), name="T_softmax_norm",
                      tag="softmax_output")


@OPS.register_attr(COMPUTE_ATTR, "nn.log_softmax")
def _log_softmax(attrs: Any, inputs: Sequence[te.Tensor], out: TensorType) -> te.Tensor:
    (x,) = inputs
    axis = attrs.axis % len(x.shape)
    mx, _, sm = _softmax_stages(x, axis)

    def body(*i: E.Expr) -> E.Expr:
        rest = i[:axis] + i[axis + 1 :]
        return x(*i) - mx(*rest) - te.log(sm(*rest))

    return te.compute(x.shape, body, name="T_log_softmax", tag="log_softmax_output")


def _reduce(kind: str) -> Compute:
    def compute(attrs: Any, inputs: Sequence[te.Tensor], out: TensorType) -> te.Tensor:
        (x,) = inputs
        ndim = len(x.shape)
        axes = list(range(ndim)) if attrs.axis is None else [a % ndim for a in attrs.axis]
        if attrs.exclude:
            axes = [a for a in range(ndim) if a not in axes]
        raxes = {a: te.reduce_axis((0, x.shape[a]), name=f"k{a}") for a in axes}
        count = math.prod(x.shape[a] for a in axes)

        def body(*i: E.Expr) -> E.Expr:
            it = iter(i)
            coords = []
            for a in range(ndim):
                if a in raxes:
                    coords.append(raxes[a])
                    if attrs.keepdims:
                        next(it)
                else:
                    coords.append(next(it))
            value = x(*coords)
            red = list(raxes.values())
            if kind == "max":
                return te.max(value, axis=red)
            if kind == "min":
                return te.min(value, axis=red)
            return te.sum(value, axis=red)

        total = te.compute(out.shape, body, name=f"T_{kind}", tag=f"comm_reduce_{kind}")
        if kind != "mean":
            return total
        return te.compute(
            out.shape, lambda *i: total(*i) / E.const(count, x.dtype), name="T_mean", tag="elemwise"
        )

    return compute


for _kind in ("sum", "mean", "max", "min"):
    _set_compute(_kind, _reduce(_kind))


@OPS.register_attr(COMPUTE_ATTR, "nn.layer_norm")
def _layer_norm(attrs: Any, inputs: Sequence[te.Tensor], out: TensorType) -> te.Tensor:
    """The mean, the (biased) variance around it, then the normalised, scaled and shifted data."""
    x, gamma, beta = inputs
    axis = attrs.axis % len(x.shape)
    shape = tuple(x.shape)
    n = shape[axis]
    red_shape = shape[:axis] + shape[axis + 1 :]
    k1, k2 = te.reduce_axis((0, n), name="k1"), te.reduce_axis((0, n), name="k2")

    def at(i: Sequence[E.Expr], k: Any) -> list[Any]:
        return [*i[:axis], k, *i[axis:]]

    def rest(i: Sequence[E.Expr]) -> tuple[E.Expr, ...]:
        return tuple(i[:axis]) + tuple(i[axis + 1 :])

    total = te.compute(red_shape, lambda *i: te.sum(x(*at(i, k1)), axis=[k1]), name="T_layer_norm_sum")
    scale = E.const(1.0 / n, x.dtype)

    def centred(i: Sequence[E.Expr]) -> E.Expr:
        return x(*i) - total(*rest(i)) * scale

    def square(i: Sequence[E.Expr]) -> E.Expr:
        d = centred(i)
        return d * d

    sq = te.compute(red_shape, lambda *i: te.sum(square(at(i, k2)), axis=[k2]), name="T_layer_norm_sqsum")
    eps = E.const(attrs.epsilon, x.dtype)

    def body(*i: E.Expr) -> E.Expr:
        value = centred(i) * te.rsqrt(sq(*rest(i)) * scale + eps)
        if attrs.scale:
            value = value * gamma(i[axis])
        if attrs.center:
            value = value + beta(i[axis])
        return value

    return te.compute(x.shape, body, name="T_layer_norm", tag="layer_norm_output")
