"""Tensor-expression definitions of the pooling and reduction operators (their ``FTVMCompute``).

Max/average pooling (windowed, global, adaptive, in any ``NCHW[x]c`` layout), ``nn.softmax``
and ``nn.log_softmax`` (along any axis), ``nn.layer_norm`` and the ``sum``/``mean``/``max``/``min``
reductions.  Softmax and layer norm along the last axis reduce whole blocks of lanes over two
axes and the rest apart (``row_reduction``), so a CPU schedule vectorizes their reductions
(``group_schedule.schedule_rows``).
``op_compute.compute_of`` loads them with the other operators' definitions.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeAlias

from tunecli.engine import te
from tunecli.engine.ir import expr as E
from tunecli.engine.ops.nn import pool2d
from tunecli.engine.te.axis_reduce import reduce_axes
from tunecli.errors import GraphError

from .layout import parse_layout
from .op_registry import COMPUTE_ATTR, OPS, Compute
from .ops.layer_norm import LayerNormAttrs
from .ops.nn import SoftmaxAttrs
from .ops.pool import GlobalPool2DAttrs, Pool2DAttrs
from .ops.reduce import ReduceAttrs
from .types import TensorType

#: A reduction along one axis as a function of the other axes' indices (see :func:`row_reduction`).
RowReduction: TypeAlias = Callable[[Sequence[E.Expr]], E.Expr]


def _set_compute(name: str, fn: Compute) -> None:
    OPS.set_attr(name, COMPUTE_ATTR, fn)


def _pool(kind: str) -> Compute:
    def compute(attrs: Pool2DAttrs, inputs: Sequence[te.Tensor], out: TensorType) -> te.Tensor:
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


def _adaptive_pool(
    kind: str, attrs: GlobalPool2DAttrs, inputs: Sequence[te.Tensor], out: TensorType
) -> te.Tensor:
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


#: Lanes of a row reduction's inner reduce axis (``row_reduction``): the widest vector of float32
#: (AVX-512); narrower targets split each block in their own vectors.
ROW_LANES = 16


def row_reduction(
    shape: Sequence[int],
    axis: int,
    reducer: Callable[..., E.Expr],
    element: Callable[[list[E.ExprLike]], E.ExprLike],
    name: str,
) -> RowReduction:
    """``reducer`` (``te.sum`` / ``te.max``) of ``element(index)`` over ``axis`` of ``shape``, as a
    function of the other axes' indices.

    Along the last axis of at least ``ROW_LANES`` elements it is two stages: the whole blocks of
    ``ROW_LANES``, reduced over ``[blocks, lanes]`` axes (a CPU schedule ``rfactor``s the lanes
    into a vector of partial results: ``group_schedule.schedule_rows``), and the remaining
    elements (stage ``<name>_tail``), combined; otherwise one stage over one axis.
    """
    red_shape = tuple(shape[:axis]) + tuple(shape[axis + 1 :])
    n = shape[axis]

    def at(i: Sequence[E.Expr], k: E.ExprLike) -> list[E.ExprLike]:
        return [*i[:axis], k, *i[axis:]]

    if axis != len(shape) - 1 or n < ROW_LANES:
        k = te.reduce_axis((0, n), name="k")
        whole = te.compute(red_shape, lambda *i: reducer(element(at(i, k)), axis=[k]), name=name)
        return lambda i: whole(*i)
    blocks, rest = divmod(n, ROW_LANES)
    kb, kv = te.reduce_axis((0, blocks), name="kb"), te.reduce_axis((0, ROW_LANES), name="kv")
    full = te.compute(red_shape, lambda *i: reducer(element(at(i, kb * ROW_LANES + kv)), axis=[kb, kv]),
                      name=name)
    if not rest:
        return lambda i: full(*i)
    kt = te.reduce_axis((0, rest), name="kt")
    tail = te.compute(red_shape, lambda *i: reducer(element(at(i, blocks * ROW_LANES + kt)), axis=[kt]),
                      name=f"{name}_tail")
    combine = E.Max if reducer is te.max else E.Add
    return lambda i: combine(full(*i), tail(*i))


def _softmax_stages(x: te.Tensor, axis: int) -> tuple[RowReduction, te.Tensor, RowReduction]:
    """``max``, ``exp(x - max)`` and its sum along ``axis`` (the stages softmax and log_softmax share),
    the reductions as functions of the other axes' indices."""
    shape = tuple(x.shape)

    def rest(i: Sequence[E.Expr]) -> list[E.Expr]:
        return [*i[:axis], *i[axis + 1 :]]

    mx = row_reduction(shape, axis, te.max, lambda i: x(*i), "T_softmax_maxelem")
    ex = te.compute(shape, lambda *i: te.exp(x(*i) - mx(rest(i))), name="T_softmax_exp")
    sm = row_reduction(shape, axis, te.sum, lambda i: ex(*i), "T_softmax_expsum")
    return mx, ex, sm


@OPS.register_attr(COMPUTE_ATTR, "nn.softmax")
def _softmax(attrs: SoftmaxAttrs, inputs: Sequence[te.Tensor], out: TensorType) -> te.Tensor:
    (x,) = inputs
    axis = attrs.axis % len(x.shape)
    _, ex, sm = _softmax_stages(x, axis)
    one = E.const(1.0, x.dtype)
    # times the sum's reciprocal: one division per row (out of the row's loop), not one per element
    return te.compute(x.shape, lambda *i: ex(*i) * (one / sm(i[:axis] + i[axis + 1 :])),
                      name="T_softmax_norm", tag="softmax_output")


@OPS.register_attr(COMPUTE_ATTR, "nn.log_softmax")
def _log_softmax(attrs: SoftmaxAttrs, inputs: Sequence[te.Tensor], out: TensorType) -> te.Tensor:
    (x,) = inputs
    axis = attrs.axis % len(x.shape)
    mx, _, sm = _softmax_stages(x, axis)

    def body(*i: E.Expr) -> E.Expr:
        rest = i[:axis] + i[axis + 1 :]
        return x(*i) - mx(rest) - te.log(sm(rest))

    return te.compute(x.shape, body, name="T_log_softmax", tag="log_softmax_output")


def _reduce(kind: str) -> Compute:
    def compute(attrs: ReduceAttrs, inputs: Sequence[te.Tensor], out: TensorType) -> te.Tensor:
        (x,) = inputs
        return reduce_axes(x, kind, attrs.axis, attrs.keepdims, attrs.exclude)

    return compute


for _kind in ("sum", "mean", "max", "min"):
    _set_compute(_kind, _reduce(_kind))


@OPS.register_attr(COMPUTE_ATTR, "nn.layer_norm")
def _layer_norm(attrs: LayerNormAttrs, inputs: Sequence[te.Tensor], out: TensorType) -> te.Tensor:
    """The mean, the (biased) variance around it, then the normalised, scaled and shifted data."""
    x, gamma, beta = inputs
    axis = attrs.axis % len(x.shape)
    shape = tuple(x.shape)

    def rest(i: Sequence[E.Expr]) -> list[E.Expr]:
        return [*i[:axis], *i[axis + 1 :]]

    total = row_reduction(shape, axis, te.sum, lambda i: x(*i), "T_layer_norm_sum")
    scale = E.const(1.0 / shape[axis], x.dtype)

    def centred(i: Sequence[E.Expr]) -> E.Expr:
        return x(*i) - total(rest(i)) * scale

    def square(i: Sequence[E.Expr]) -> E.Expr:
        d = centred(i)
        return d * d

    sq = row_reduction(shape, axis, te.sum, square, "T_layer_norm_sqsum")
    eps = E.const(attrs.epsilon, x.dtype)

    def body(*i: E.Expr) -> E.Expr:
        value = centred(i) * te.rsqrt(sq(rest(i)) * scale + eps)
        if attrs.scale:
            value = value * gamma(i[axis])
        if attrs.center:
            value = value + beta(i[axis])
        return value

    return te.compute(x.shape, body, name="T_layer_norm", tag="layer_norm_output")
