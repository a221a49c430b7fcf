"""TVM's ``topi`` operators on te tensors, defined by the graph operators' te definitions.

A TOPI call (``topi.nn.softmax(x, axis=1)``, ``topi.sum(x, axis=0)``, ``topi.transpose(x)``)
builds the graph call of the same operator on variables of its inputs' shapes and dtypes, infers
its type (the operator's own checks and errors) and returns what the operator's ``FTVMCompute``
definition builds on the given te tensors (``topi.add`` is ``ops.nn.add``): the stages a network's
kernel computes, which a user's schedule (``te.create_schedule(out.op)``) then places.  The
broadcast arithmetic (``te.broadcasting``, a Python number for either operand as in TVM) and the
reductions (``te.axis_reduce``) are te's own, so they also take symbolic sizes (``te.var``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeAlias

from tunecli.engine import te
from tunecli.engine.ir import expr as E
from tunecli.engine.ops.nn import conv2d_nchw
from tunecli.engine.te.axis_reduce import reduce_axes
from tunecli.engine.te.broadcasting import broadcast_binary
from tunecli.errors import GraphError

from .graph_expr import Call, Expr, var
from .op_compute import compute_of
from .ops import nn, replicate, slicing, transform, unary
from .type_infer import infer_types, tensor_type_of

#: What a TOPI operator takes where the graph operator takes an expression.
TensorArg: TypeAlias = "te.Tensor | Sequence[te.Tensor]"
Scalar: TypeAlias = int | float


def te_call(make: Callable[..., Call], *inputs: TensorArg, **attrs: object) -> te.Tensor:
    """``make(*graph variables, **attrs)``'s operator computed on ``inputs`` (te tensors, or one
    sequence of them for operators of a tuple such as ``concatenate``)."""
    flat: list[te.Tensor] = []
    graph_args: list[Expr | list[Expr]] = []
    for arg in inputs:
        if isinstance(arg, (list, tuple)):
            graph_args.append([_graph_var(t, flat) for t in arg])
        else:
            graph_args.append(_graph_var(arg, flat))
    call = make(*graph_args, **attrs)
    infer_types(call)
    return compute_of(call.op.name)(call.attrs, flat, tensor_type_of(call))


def _graph_var(t: object, flat: list[te.Tensor]) -> Expr:
    if not isinstance(t, te.Tensor):
        raise GraphError(f"topi: expected a te.Tensor, got {t!r}")
    if not all(isinstance(n, int) for n in t.shape):
        raise GraphError(f"topi: tensor {t.name} has symbolic sizes {t.shape}; this operator needs constant "
                         "ones (the elementwise arithmetic and the reductions take symbolic sizes)")
    flat.append(t)
    return var(f"{t.op.name}_{len(flat)}", shape=tuple(t.shape), dtype=t.dtype)


def _binary(fn: Callable[[E.Expr, E.Expr], E.Expr], name: str
            ) -> Callable[[te.Tensor | Scalar, te.Tensor | Scalar], te.Tensor]:
    def op(lhs: te.Tensor | Scalar, rhs: te.Tensor | Scalar) -> te.Tensor:
        if not isinstance(lhs, te.Tensor) and not isinstance(rhs, te.Tensor):
            raise GraphError(f"topi.{name}: at least one operand must be a te.Tensor, got {lhs!r} and "
                             f"{rhs!r}")
        return broadcast_binary(fn, lhs, rhs, name)

    op.__name__ = name
    op.__doc__ = f"``{name}`` of two tensors (numpy broadcasting) or of a tensor and a number."
    return op


subtract = _binary(lambda a, b: a - b, "subtract")
multiply = _binary(lambda a, b: a * b, "multiply")
divide = _binary(lambda a, b: a / b, "divide")
maximum = _binary(lambda a, b: te.max(a, b), "maximum")
minimum = _binary(lambda a, b: te.min(a, b), "minimum")
power = _binary(lambda a, b: te.power(a, b), "power")


def elemwise_sum(xs: Sequence[te.Tensor]) -> te.Tensor:
    """The elementwise sum of tensors of one shape."""
    if not xs:
        raise GraphError("topi.elemwise_sum: no tensors given")
    total = xs[0]
    for x in xs[1:]:
        total = broadcast_binary(lambda a, b: a + b, total, x, "elemwise_sum")
    return total


def _unary(make: Callable[..., Call], name: str) -> Callable[[te.Tensor], te.Tensor]:
    def op(x: te.Tensor) -> te.Tensor:
        return te_call(make, x)

    op.__name__ = name
    op.__doc__ = f"``{name}`` of every element."
    return op


exp = _unary(unary.exp, "exp")
log = _unary(unary.log, "log")
sqrt = _unary(unary.sqrt, "sqrt")
rsqrt = _unary(unary.rsqrt, "rsqrt")
sigmoid = _unary(unary.sigmoid, "sigmoid")
tanh = _unary(unary.tanh, "tanh")
negative = _unary(unary.negative, "negative")
abs = _unary(unary.abs, "abs")  # noqa: A001 - TVM's name
erf = _unary(unary.erf, "erf")


def cast(x: te.Tensor, dtype: str) -> te.Tensor:
    """Every element converted to ``dtype``."""
    return te_call(unary.cast, x, dtype=dtype)


def clip(x: te.Tensor, a_min: float, a_max: float) -> te.Tensor:
    """Every element limited to ``[a_min, a_max]``."""
    return te_call(unary.clip, x, a_min=a_min, a_max=a_max)


def leaky_relu(x: te.Tensor, alpha: float) -> te.Tensor:
    """``x`` where positive, ``alpha * x`` elsewhere."""
    return te_call(unary.leaky_relu, x, alpha=alpha)


def softmax(x: te.Tensor, axis: int = -1) -> te.Tensor:
    """Softmax along ``axis``."""
    return te_call(nn.softmax, x, axis=axis)


def log_softmax(x: te.Tensor, axis: int = -1) -> te.Tensor:
    """Log of the softmax along ``axis``."""
    return te_call(nn.log_softmax, x, axis=axis)


def flatten(data: te.Tensor) -> te.Tensor:
    """``[N, ...]`` to ``[N, prod(...)]``."""
    return te_call(nn.batch_flatten, data)


def _reduction(kind: str) -> Callable[..., te.Tensor]:
    def op(data: te.Tensor, axis: int | Sequence[int] | None = None, keepdims: bool = False) -> te.Tensor:
        return reduce_axes(data, kind, axis, keepdims)

    op.__name__ = kind
    op.__doc__ = f"``{kind}`` over ``axis`` (all axes when None), the reduced axes kept as 1 if ``keepdims``."
    return op


sum = _reduction("sum")  # noqa: A001 - TVM's name
max = _reduction("max")  # noqa: A001
min = _reduction("min")  # noqa: A001
mean = _reduction("mean")


def transpose(a: te.Tensor, axes: Sequence[int] | None = None) -> te.Tensor:
    """``a`` with its axes permuted (reversed when ``axes`` is None)."""
    return te_call(transform.transpose, a, axes=axes)


def reshape(a: te.Tensor, newshape: int | Sequence[int]) -> te.Tensor:
    """``a``'s elements, in order, in ``newshape`` (one entry may be -1)."""
    return te_call(transform.reshape, a, newshape=newshape)


def squeeze(a: te.Tensor, axis: Sequence[int] | None = None) -> te.Tensor:
    """``a`` without its axes of extent 1 (those of ``axis``)."""
    return te_call(transform.squeeze, a, axis=axis)


def expand_dims(a: te.Tensor, axis: int, num_newaxis: int = 1) -> te.Tensor:
    """``a`` with ``num_newaxis`` axes of extent 1 inserted at ``axis``."""
    return te_call(transform.expand_dims, a, axis=axis, num_newaxis=num_newaxis)


def concatenate(a_tuple: Sequence[te.Tensor], axis: int = 0) -> te.Tensor:
    """The tensors of ``a_tuple`` joined along ``axis``."""
    return te_call(transform.concatenate, list(a_tuple), axis=axis)


def broadcast_to(data: te.Tensor, shape: Sequence[int]) -> te.Tensor:
    """``data`` broadcast to ``shape`` (numpy's rules)."""
    return te_call(replicate.broadcast_to, data, shape=shape)


def strided_slice(a: te.Tensor, begin: Sequence[int], end: Sequence[int],
                  strides: Sequence[int] | None = None) -> te.Tensor:
    """``a[begin:end:strides]`` along its leading axes."""
    return te_call(slicing.strided_slice, a, begin=begin, end=end, strides=strides)


def take(a: te.Tensor, indices: te.Tensor, axis: int | None = None, mode: str = "clip") -> te.Tensor:
    """Elements of ``a`` at ``indices`` along ``axis`` (of the flattened ``a`` when None)."""
    return te_call(slicing.take, a, indices, axis=axis, mode=mode)



def conv2d(input: te.Tensor, filter: te.Tensor, strides: int | Sequence[int],  # noqa: A002 - TVM's names
           padding: int | Sequence[int] | str, dilation: int | Sequence[int], data_layout: str = "NCHW",
           kernel_layout: str = "", out_dtype: str | None = None) -> te.Tensor:
    """2-D convolution (TOPI's ``nn.conv2d``): NCHW data with an OIHW filter, the only layout pair
    computed here (``conv2d_nchw``); another layout is a GraphError naming it."""
    if data_layout != "NCHW" or kernel_layout not in ("", "OIHW"):
        raise GraphError(f"topi.nn.conv2d: only NCHW data with an OIHW filter is computed, got data_layout="
                         f"{data_layout!r}, kernel_layout={kernel_layout!r}")
    return conv2d_nchw(input, filter, strides, padding, dilation, out_dtype)


__all__ = [
    "te_call", "elemwise_sum", "subtract", "multiply", "divide", "maximum", "minimum", "power", "exp", "log",
    "sqrt", "rsqrt", "sigmoid", "tanh", "negative", "abs", "erf", "cast", "clip", "leaky_relu", "softmax",
    "log_softmax", "flatten", "sum", "max", "min", "mean", "transpose", "reshape", "squeeze", "expand_dims",
    "concatenate", "broadcast_to", "strided_slice", "take", "conv2d",
]
