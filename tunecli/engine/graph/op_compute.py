"""Tensor-expression definitions of the graph operators (TVM's ``FTVMCompute``).

Each operator's definition is its ``"FTVMCompute"`` attribute in the operator registry
(``OPS.get_attr(name, "FTVMCompute")``): ``compute(attrs, inputs, out_type) -> te.Tensor`` builds
the te stages of one graph call on the te tensors of its arguments; ``out_type`` is the call's inferred
:class:`TensorType`.  Elementwise, broadcast and injective stages carry the tags
``ops.epilogue`` inlines (``elemwise``, ``broadcast``, ``injective``), so a fused group's
consumers of an anchor become its schedule's epilogue.  The tunable anchors (``nn.conv2d``,
``nn.dense``, ``nn.batch_matmul``) are computed through their strategies by
``graph.lower_group``; their entries here are the plain definitions used when no strategy
applies (grouped convolutions other than depthwise).  The pooling, softmax and reduction
definitions are in :mod:`.reduction_compute`, those of the selection, indexing and math operators
of transformers in :mod:`.tensor_compute`: :func:`compute_of` loads every module of
:data:`DEFINITION_MODULES` before its first answer.
"""

from __future__ import annotations

import importlib
import math
from collections.abc import Callable, Sequence
from typing import Any, cast

from tunecli.engine import te
from tunecli.engine.ir import expr as E
from tunecli.engine.ops.nn import bias_add, dense, pad
from tunecli.errors import GraphError

from .layout import parse_layout
from .op_registry import COMPUTE_ATTR, OPS, Attrs, Compute
from .ops.conv import Conv2DAttrs
from .ops.nn import BatchMatmulAttrs, BiasAddAttrs, DenseAttrs, PadAttrs
from .ops.transform import ConcatenateAttrs, LayoutTransformAttrs, TransposeAttrs
from .tensor_compute import broadcast_read as _read
from .types import TensorType


def _set(name: str, fn: Compute) -> None:
    OPS.set_attr(name, COMPUTE_ATTR, fn)


def _register(*names: str) -> Callable[[Compute], Compute]:
    return OPS.register_attr(COMPUTE_ATTR, *names)


#: The modules (of this package) whose definitions fill the ``FTVMCompute`` attributes with this
#: module's own.
DEFINITION_MODULES = ("reduction_compute", "tensor_compute")
_loaded: list[str] = []


def compute_of(op_name: str) -> Compute:
    """The te definition of graph operator ``op_name`` (GraphError naming the operators that have one)."""
    for module in DEFINITION_MODULES:
        if module not in _loaded:
            importlib.import_module(f"{__package__}.{module}")
            _loaded.append(module)
    if not OPS.has_attr(op_name, COMPUTE_ATTR):
        have = ", ".join(n for n in OPS.names() if OPS.has_attr(n, COMPUTE_ATTR))
        raise GraphError(f"{op_name}: no compiled implementation; the compiler supports {have}")
    return cast(Compute, OPS.get_attr(op_name, COMPUTE_ATTR))


def _binary(name: str, fn: Callable[[E.Expr, E.Expr], E.Expr]) -> Compute:
    def compute(attrs: Attrs, inputs: Sequence[te.Tensor], out: TensorType) -> te.Tensor:
        a, b = inputs
        return te.compute(
            out.shape,
            lambda *i: fn(_read(a, out.shape, i), _read(b, out.shape, i)),
            name=f"T_{name}",
            tag="broadcast",
        )

    return compute


for _name, _fn in {
    "add": lambda a, b: a + b,
    "subtract": lambda a, b: a - b,
    "multiply": lambda a, b: a * b,
    "divide": lambda a, b: a / b,
    "maximum": lambda a, b: te.max(a, b),
    "minimum": lambda a, b: te.min(a, b),
}.items():
    _set(_name, _binary(_name, _fn))


#: ``fn(x, attrs, dtype)`` of an elementwise operator; ``attrs`` is its operator's own Attrs subclass
#: (typed Any as at ``op_registry.TypeRelation``).
UnaryBody = Callable[[E.Expr, Any, str], E.Expr]


def _unary(name: str, fn: UnaryBody) -> Compute:
    def compute(attrs: Attrs, inputs: Sequence[te.Tensor], out: TensorType) -> te.Tensor:
        (x,) = inputs
        return te.compute(out.shape, lambda *i: fn(x(*i), attrs, out.dtype), name=f"T_{name}", tag="elemwise")

    return compute


_UNARY: dict[str, UnaryBody] = {
    "nn.relu": lambda x, a, dt: te.max(x, E.const(0, dt)),
    "nn.leaky_relu": lambda x, a, dt: E.Select(x > E.const(0, dt), x, x * E.const(a.alpha, dt)),
    "clip": lambda x, a, dt: te.max(te.min(x, E.const(a.a_max, dt)), E.const(a.a_min, dt)),
    "sigmoid": lambda x, a, dt: te.sigmoid(x),
    "tanh": lambda x, a, dt: te.tanh(x),
    "exp": lambda x, a, dt: te.exp(x),
    "sqrt": lambda x, a, dt: te.sqrt(x),
    "negative": lambda x, a, dt: E.const(0, dt) - x,
    "cast": lambda x, a, dt: x.astype(dt),
}
for _name, _ufn in _UNARY.items():
    _set(_name, _unary(_name.split(".")[-1], _ufn))


@_register("nn.bias_add")
def _bias_add(attrs: BiasAddAttrs, inputs: Sequence[te.Tensor], out: TensorType) -> te.Tensor:
    data, bias = inputs
    return bias_add(data, bias, attrs.axis)


def _unravel(flat: E.Expr, shape: Sequence[int]) -> list[E.Expr]:
    idx = []
    for k in range(len(shape)):
        inner = math.prod(shape[k + 1 :])
        v = flat // inner if inner > 1 else flat
        idx.append(v % shape[k] if k > 0 else v)
    return idx


def _ravel(idx: Sequence[E.Expr], shape: Sequence[int]) -> E.Expr:
    flat: E.Expr = E.const(0, "int32")
    for i, s in zip(idx, shape, strict=True):
        flat = flat * s + i
    return flat


@_register("reshape", "nn.batch_flatten", "squeeze", "expand_dims")
def _reshape(attrs: Attrs, inputs: Sequence[te.Tensor], out: TensorType) -> te.Tensor:
    (x,) = inputs
    return te.compute(
        out.shape,
        lambda *i: x(*_unravel(_ravel(i, out.shape), x.shape)),
        name="T_reshape",
        tag="injective,reshape",
    )


@_register("transpose")
def _transpose(attrs: TransposeAttrs, inputs: Sequence[te.Tensor], out: TensorType) -> te.Tensor:
    (x,) = inputs
    ndim = len(x.shape)
    axes = [a % ndim for a in attrs.axes] if attrs.axes else list(reversed(range(ndim)))

    def read(*i: E.Expr) -> E.Expr:
        src = [None] * ndim
        for k, a in enumerate(axes):
            src[a] = i[k]
        return x(*src)

    return te.compute(out.shape, read, name="T_transpose", tag="injective,transpose")


@_register("concatenate")
def _concatenate(attrs: ConcatenateAttrs, inputs: Sequence[te.Tensor], out: TensorType) -> te.Tensor:
    axis = attrs.axis % len(out.shape)
    starts = [0]
    for t in inputs:
        starts.append(starts[-1] + t.shape[axis])

    def read(*i: E.Expr) -> E.Expr:
        value = None
        for t, start in zip(inputs, starts, strict=False):
            src = list(i)
            src[axis] = i[axis] - start
            here = t(*src)
            value = here if value is None else te.if_then_else(i[axis] >= start, here, value)
        return value

    return te.compute(out.shape, read, name="T_concat", tag="injective,concatenate")


@_register("nn.pad")
def _pad(attrs: PadAttrs, inputs: Sequence[te.Tensor], out: TensorType) -> te.Tensor:
    (x,) = inputs
    before = [int(p[0]) for p in attrs.pad_width]
    after = [int(p[1]) for p in attrs.pad_width]
    if attrs.pad_mode == "constant":
        return pad(x, before, after, pad_value=E.const(attrs.pad_value, x.dtype), name="T_pad")
    if attrs.pad_mode not in ("edge", "reflect"):
        raise GraphError(f"nn.pad: pad_mode {attrs.pad_mode!r}; compiled are constant, edge and reflect")

    def source(i: E.Expr, begin: int, n: int) -> E.Expr:
        """The input index a padded index reads: the nearest edge, or mirrored about it."""
        j = i - begin
        if attrs.pad_mode == "edge":
            return te.max(te.min(j, n - 1), 0)
        mirrored = E.Select(j < 0, E.const(0, j.dtype) - j, j)
        return E.Select(mirrored >= n, 2 * (n - 1) - mirrored, mirrored)

    def read(*i: E.Expr) -> E.Expr:
        return x(*[source(v, b, int(n)) if b or a else v for v, b, a, n in zip(i, before, after, x.shape,
                                                                                 strict=True)])

    return te.compute(out.shape, read, name="T_pad", tag="injective,pad")


def _block(layout: Sequence[tuple[str, int | None]], axis: str) -> int:
    return next((f for a, f in layout if f is not None and a == axis.lower()), 1)


@_register("layout_transform")
def _layout_transform(attrs: LayoutTransformAttrs, inputs: Sequence[te.Tensor], out: TensorType) -> te.Tensor:
    (x,) = inputs
    src, dst = parse_layout(attrs.src_layout), parse_layout(attrs.dst_layout)

    def read(*i: E.Expr) -> E.Expr:
        value: dict[str, E.Expr] = {}
        for (axis, factor), v in zip(dst, i, strict=True):
            if factor is None:
                value[axis] = value.get(axis, 0) + v * _block(dst, axis)
            else:
                value[axis.upper()] = value.get(axis.upper(), 0) + v
        coords = []
        for axis, factor in src:
            if factor is None:
                block = _block(src, axis)
                coords.append(value[axis] // block if block > 1 else value[axis])
            else:
                coords.append(value[axis.upper()] % factor)
        return x(*coords)

    return te.compute(out.shape, read, name="T_layout_trans", tag="injective,layout_transform")


@_register("nn.dense")
def _dense(attrs: DenseAttrs, inputs: Sequence[te.Tensor], out: TensorType) -> te.Tensor:
    data, weight = inputs
    return dense(data, weight, out_dtype=out.dtype)


@_register("nn.batch_matmul")
def _batch_matmul(attrs: BatchMatmulAttrs, inputs: Sequence[te.Tensor], out: TensorType) -> te.Tensor:
    """``a @ b`` per batch with TVM's ``transpose_a`` / ``transpose_b`` (batch 1 broadcasts)."""
    a, b = inputs
    k_len = a.shape[1] if attrs.transpose_a else a.shape[2]
    k = te.reduce_axis((0, k_len), name="k")

    def body(n: E.Expr, i: E.Expr, j: E.Expr) -> E.Expr:
        na, nb = (n if a.shape[0] != 1 else 0), (n if b.shape[0] != 1 else 0)
        lhs = a[na, k, i] if attrs.transpose_a else a[na, i, k]
        rhs = b[nb, j, k] if attrs.transpose_b else b[nb, k, j]
        return te.sum(lhs.astype(out.dtype) * rhs.astype(out.dtype), axis=k)

    return te.compute(out.shape, body, name="T_batch_matmul", tag="batch_matmul")


@_register("nn.conv2d")
def _grouped_conv2d(attrs: Conv2DAttrs, inputs: Sequence[te.Tensor], out: TensorType) -> te.Tensor:
    """Grouped NCHW convolution (any number of groups), the plain definition."""
    data, weight = inputs
    if attrs.data_layout != "NCHW" or attrs.kernel_layout != "OIHW":
        raise GraphError(
            f"nn.conv2d: only NCHW data with OIHW kernels is compiled, got {attrs.data_layout} "
            f"and {attrs.kernel_layout}"
        )
    _, ci, _, _ = data.shape
    co, cig, kh, kw = weight.shape
    groups = attrs.groups
    (sh, sw), (dh, dw) = attrs.strides, attrs.dilation
    pt, pl, pb, pr = _padding4(attrs.padding)
    padded = pad(data, [0, 0, pt, pl], [0, 0, pb, pr], name="pad_temp") if pt or pl or pb or pr else data
    rc, ry, rx = (
        te.reduce_axis((0, cig), name="rc"),
        te.reduce_axis((0, kh), name="ry"),
        te.reduce_axis((0, kw), name="rx"),
    )
    per_group = co // groups
    return te.compute(
        out.shape,
        lambda n, f, y, x: te.sum(
            padded[n, f // per_group * cig + rc, y * sh + ry * dh, x * sw + rx * dw].astype(out.dtype)
            * weight[f, rc, ry, rx].astype(out.dtype),
            axis=[rc, ry, rx],
        ),
        name="group_conv2d_nchw",
        tag="group_conv2d_nchw",
    )


def _padding4(padding: Sequence[int]) -> tuple[int, int, int, int]:
    p = [int(v) for v in padding]
    if len(p) == 1:
        return p[0], p[0], p[0], p[0]
    if len(p) == 2:
        return p[0], p[1], p[0], p[1]
    return p[0], p[1], p[2], p[3]
