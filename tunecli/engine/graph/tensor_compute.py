"""Tensor-expression definitions (``FTVMCompute``) of the transformer-era operators: the math
unaries (log, rsqrt, erf, abs), power, comparisons and logical operators, where, trilu, take,
strided_slice, broadcast_to, tile, arange, nn.conv2d_transpose and image.resize2d.
``op_compute.compute_of`` loads these definitions with the others."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from tunecli.engine import te
from tunecli.engine.ir import expr as E

from .op_registry import COMPUTE_ATTR, OPS, Attrs, Compute
from .ops.conv_transpose import Conv2DTransposeAttrs, transpose_geometry
from .ops.replicate import ArangeAttrs, TileAttrs, arange_length
from .ops.resize import Resize2DAttrs, source_coordinate
from .ops.selection import TriluAttrs
from .ops.slicing import StridedSliceAttrs, TakeAttrs, slice_ranges
from .types import TensorType


def _set(name: str, fn: Compute) -> None:
    OPS.set_attr(name, COMPUTE_ATTR, fn)


def broadcast_read(t: te.Tensor, shape: Sequence[int], idx: Sequence[E.Expr]) -> E.Expr:
    """``t`` read at the broadcast of index ``idx`` of an output of ``shape`` (numpy's rules)."""
    skip = len(shape) - len(t.shape)
    return t(*[idx[skip + d] if t.shape[d] != 1 else 0 for d in range(len(t.shape))])


def _elementwise(name: str, fn: Callable[..., E.Expr], tag: str) -> Compute:
    """A compute applying ``fn(*reads, out_dtype)`` to every input read at the output's index."""

    def compute(attrs: Attrs, inputs: Sequence[te.Tensor], out: TensorType) -> te.Tensor:
        return te.compute(
            out.shape,
            lambda *i: fn(*[broadcast_read(t, out.shape, i) for t in inputs], out.dtype),
            name=f"T_{name}",
            tag=tag,
        )

    return compute


_UNARY: dict[str, Callable[[E.Expr, str], E.Expr]] = {
    "log": lambda x, dt: te.log(x),
    "rsqrt": lambda x, dt: te.rsqrt(x),
    "erf": lambda x, dt: te.erf(x),
    "abs": lambda x, dt: te.abs(x),
    "logical_not": lambda x, dt: ~x,
    # ordered comparisons: false for NaN (and not simplified away as ``x != x`` would be)
    "isnan": lambda x, dt: ~(x <= E.const(math.inf, x.dtype)),
    "isinf": lambda x, dt: te.abs(x) == E.const(math.inf, x.dtype),
}
_BINARY: dict[str, Callable[[E.Expr, E.Expr, str], E.Expr]] = {
    "power": lambda a, b, dt: E.cast(dt, te.power(a, b)),
    "equal": lambda a, b, dt: a == b,
    "not_equal": lambda a, b, dt: a != b,
    "less": lambda a, b, dt: a < b,
    "less_equal": lambda a, b, dt: a <= b,
    "greater": lambda a, b, dt: a > b,
    "greater_equal": lambda a, b, dt: a >= b,
    "logical_and": lambda a, b, dt: a & b,
    "logical_or": lambda a, b, dt: a | b,
    "logical_xor": lambda a, b, dt: a != b,
}
for _name, _ufn in _UNARY.items():
    _set(_name, _elementwise(_name, _ufn, "elemwise"))
for _name, _bfn in _BINARY.items():
    _set(_name, _elementwise(_name, _bfn, "broadcast"))
_set("where", _elementwise("where", lambda c, x, y, dt: E.Select(c, x, y), "broadcast"))
_set("broadcast_to", _elementwise("broadcast_to", lambda x, dt: x, "broadcast"))


@OPS.register_attr(COMPUTE_ATTR, "trilu")
def _trilu(attrs: TriluAttrs, inputs: Sequence[te.Tensor], out: TensorType) -> te.Tensor:
    (x,) = inputs

    def body(*i: E.Expr) -> E.Expr:
        offset = i[-1] - i[-2]
        keep = offset >= attrs.k if attrs.upper else offset <= attrs.k
        return E.Select(keep, x(*i), E.const(0, out.dtype))

    return te.compute(out.shape, body, name="T_trilu", tag="injective")


@OPS.register_attr(COMPUTE_ATTR, "take")
def _take(attrs: TakeAttrs, inputs: Sequence[te.Tensor], out: TensorType) -> te.Tensor:
    data, indices = inputs
    flat = attrs.axis is None
    axis = 0 if flat else attrs.axis % len(data.shape)
    size = int(data.shape[axis]) if not flat else math.prod(int(s) for s in data.shape)
    nidx = len(indices.shape)

    def body(*i: E.Expr) -> E.Expr:
        raw = indices(*i[axis : axis + nidx]).astype("int32")
        if attrs.mode == "wrap":
            pos = te.floormod(raw, size)
        else:
            pos = te.max(te.min(raw, size - 1), 0)
        if flat:
            return data(*_unravel(pos, data.shape))
        return data(*i[:axis], pos, *i[axis + nidx :])

    return te.compute(out.shape, body, name="T_take", tag="injective,take")


def _unravel(flat: E.Expr, shape: Sequence[int]) -> list[E.Expr]:
    idx: list[E.Expr] = []
    stride = math.prod(int(s) for s in shape)
    for s in shape:
        stride //= int(s)
        idx.append(te.floormod(te.floordiv(flat, stride), s) if stride > 1 else te.floormod(flat, s))
    return idx


@OPS.register_attr(COMPUTE_ATTR, "strided_slice")
def _strided_slice(attrs: StridedSliceAttrs, inputs: Sequence[te.Tensor], out: TensorType) -> te.Tensor:
    (x,) = inputs
    ranges = slice_ranges("strided_slice", tuple(int(s) for s in x.shape), attrs)
    return te.compute(
        out.shape,
        lambda *i: x(*[r.start + v * r.step for r, v in zip(ranges, i, strict=True)]),
        name="T_strided_slice",
        tag="injective,strided_slice",
    )


@OPS.register_attr(COMPUTE_ATTR, "tile")
def _tile(attrs: TileAttrs, inputs: Sequence[te.Tensor], out: TensorType) -> te.Tensor:
    (x,) = inputs
    skip = len(out.shape) - len(x.shape)
    return te.compute(
        out.shape,
        lambda *i: x(*[te.floormod(i[skip + d], s) if s != 1 else 0 for d, s in enumerate(x.shape)]),
        name="T_tile",
        tag="injective,tile",
    )


@OPS.register_attr(COMPUTE_ATTR, "arange")
def _arange(attrs: ArangeAttrs, inputs: Sequence[te.Tensor], out: TensorType) -> te.Tensor:
    arange_length("arange", attrs)
    start, step = E.const(attrs.start, "float64"), E.const(attrs.step, "float64")
    return te.compute(
        out.shape, lambda i: E.cast(out.dtype, start + E.cast("float64", i) * step), name="T_arange",
        tag="injective",
    )


@OPS.register_attr(COMPUTE_ATTR, "nn.conv2d_transpose")
def _conv2d_transpose(attrs: Conv2DTransposeAttrs, inputs: Sequence[te.Tensor], out: TensorType) -> te.Tensor:
    """Each output pixel gathers the input pixels whose scattered window covers it."""
    data, weight = inputs
    n_, c, h, w = (int(v) for v in data.shape)
    _, per_out, kh, kw = (int(v) for v in weight.shape)
    (pt, pl, _, _), _ = transpose_geometry("nn.conv2d_transpose", (n_, c, h, w), (c, per_out, kh, kw), attrs)
    per_in = c // attrs.groups
    (sh, sw), (dh, dw) = attrs.strides, attrs.dilation
    rc = te.reduce_axis((0, per_in), name="rc")
    ry, rx = te.reduce_axis((0, kh), name="ry"), te.reduce_axis((0, kw), name="rx")

    def body(n: E.Expr, o: E.Expr, y: E.Expr, x: E.Expr) -> E.Expr:
        ci = (o // per_out) * per_in + rc
        py, px = y + (pt - ry * dh), x + (pl - rx * dw)
        iy, ix = te.floordiv(py, sh), te.floordiv(px, sw)
        inside = te.all(py >= 0, px >= 0, te.floormod(py, sh) == 0, te.floormod(px, sw) == 0, iy < h, ix < w)
        value = te.if_then_else(inside, data[n, ci, iy, ix], E.const(0, out.dtype))
        return te.sum(value * weight[ci, o % per_out, ry, rx], axis=[rc, ry, rx])

    return te.compute(out.shape, body, name="T_conv2d_transpose", tag="conv2d_transpose_nchw")


def _resize_reads(attrs: Resize2DAttrs, axis: int, in_len: int,
                  i: E.Expr) -> tuple[E.Expr, E.Expr, E.Expr | None]:
    """The two input indices output index ``i`` reads along ``axis`` and the second's weight
    (None for nearest-neighbour)."""
    x = source_coordinate(E.cast("float32", i), in_len, attrs.size[axis], attrs.scale[axis],
                          attrs.coordinate_transformation_mode)

    def clamp(v: E.Expr) -> E.Expr:
        return te.max(te.min(E.cast("int32", v), in_len - 1), 0)

    if attrs.method == "nearest_neighbor":
        rounding = {"round_prefer_floor": lambda v: te.ceil(v - 0.5), "floor": te.floor, "ceil": te.ceil,
                    "round_prefer_ceil": lambda v: te.floor(v + 0.5)}
        rounded = rounding[attrs.rounding_method](x)
        index = clamp(rounded)
        return index, index, None
    low = te.floor(x)
    return clamp(low), clamp(low + 1.0), x - low


@OPS.register_attr(COMPUTE_ATTR, "image.resize2d")
def _resize2d(attrs: Resize2DAttrs, inputs: Sequence[te.Tensor], out: TensorType) -> te.Tensor:
    (data,) = inputs
    h, w = int(data.shape[2]), int(data.shape[3])

    def body(n: E.Expr, c: E.Expr, y: E.Expr, x: E.Expr) -> E.Expr:
        y0, y1, wy = _resize_reads(attrs, 0, h, y)
        x0, x1, wx = _resize_reads(attrs, 1, w, x)
        if wy is None or wx is None:
            return data[n, c, y0, x0]
        one = E.const(1.0, "float32")
        top = data[n, c, y0, x0] * (one - wx) + data[n, c, y0, x1] * wx
        bottom = data[n, c, y1, x0] * (one - wx) + data[n, c, y1, x1] * wx
        return E.cast(out.dtype, top * (one - wy) + bottom * wy)

    return te.compute(out.shape, body, name="T_resize2d", tag="injective,resize2d")
