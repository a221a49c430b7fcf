"""``placeholder`` and ``compute``: the two ways to define a tensor."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from typing import TypeAlias

from tunecli.engine.ir import expr as E
from tunecli.engine.ir.dtype import parse_dtype
from tunecli.engine.ir.visitor import Visitor
from tunecli.errors import ExprError

from .operation import ComputeOp, PlaceholderOp
from .reduction import Reduce, symbolic_hint
from .tensor import DATA_PAR, Tensor, make_iter_var

#: A tensor's shape: one extent or a sequence of them (ints, integral floats, constant expressions).
ShapeLike: TypeAlias = "E.ExprLike | Sequence[E.ExprLike]"


def _shape_entry(s: E.ExprLike, what: str) -> int:
    """One extent as an int; integral floats (``64 / 32``) are accepted, as TVM does."""
    if isinstance(s, (float, E.FloatImm)):
        value = float(s)
        if not value.is_integer():
            raise ExprError(f"{what}: shape entry {value!r} is not an integer")
        return int(value)
    if isinstance(s, int):
        return s
    try:
        c = E.convert(s)
    except Exception as exc:
        raise ExprError(f"{what}: shape entries must be integer constants, got {s!r}") from exc
    if isinstance(c, E.FloatImm):
        return _shape_entry(c, what)
    if not isinstance(c, E.IntImm):
        if symbolic_hint(c) and E.parse_dtype(c.dtype).is_int:
            return c
        raise ExprError(f"{what}: shape entries must be integer constants, got {s!r}{symbolic_hint(c)}")
    return int(c.value)



def _shape_tuple(shape: ShapeLike, what: str) -> tuple[int, ...]:
    if isinstance(shape, (int, float, E.ConstExpr)) or hasattr(shape, "__index__") or (
            hasattr(shape, "dtype") and getattr(shape, "ndim", None) == 0):  # numpy scalars
        shape = (shape,)
    out = []
    for s in shape:
        n = _shape_entry(s, what)
        if isinstance(n, int) and n < 1:
            raise ExprError(f"{what}: shape entries must be positive, got {tuple(shape)}")
        out.append(n)
    return tuple(out)


def placeholder(shape: ShapeLike, dtype: str = "float32", name: str = "placeholder") -> Tensor:
    """An input tensor.

    Parameters
    ----------
    shape : int or sequence of int
        Constant extents.
    dtype : str
        Element type, e.g. ``float32`` or ``int8``.
    name : str
        Name of the tensor (and of the kernel argument).

    Returns
    -------
    Tensor
    """
    parse_dtype(dtype)
    return PlaceholderOp(name, _shape_tuple(shape, f"placeholder {name}"), dtype).output(0)


def compute(shape: ShapeLike, fcompute: Callable[..., E.ExprLike | Sequence[E.ExprLike]],
            name: str = "compute", tag: str = "", attrs: dict | None = None) -> Tensor | list[Tensor]:
    """A tensor defined elementwise by ``fcompute``.

    Parameters
    ----------
    shape : int or sequence of int
        Output extents.
    fcompute : callable
        Receives one index variable per dimension and returns an expression (or one reduction),
        or a tuple of them: elementwise values, or the values of one tuple reduction.
    name, tag : str
        Name of the operation; tag for operator-level dispatch.
    attrs : dict, optional
        Free-form attributes kept on the operation.

    Returns
    -------
    Tensor, or a list of Tensors when ``fcompute`` returns several values
    """
    dims = _shape_tuple(shape, f"compute {name}")
    names = _arg_names(fcompute, len(dims), name)
    axis = [make_iter_var(0, n, v, DATA_PAR) for n, v in zip(dims, names, strict=True)]
    try:
        value = fcompute(*[iv.var for iv in axis])
    except TypeError as exc:
        raise ExprError(f"compute {name}: fcompute failed: {exc}") from exc
    bodies = [E.convert(b) for b in (value if isinstance(value, (list, tuple)) else [value])]
    if not bodies:
        raise ExprError(f"compute {name}: fcompute returned no expression")
    for body in bodies:
        _check_reduce_top_level(body, name)
    _check_outputs_agree(bodies, name)
    op = ComputeOp(name, tag, attrs, axis, bodies)
    return op.output(0) if len(bodies) == 1 else [op.output(i) for i in range(len(bodies))]


def _check_outputs_agree(bodies: list[E.Expr], name: str) -> None:
    """Several outputs are all elementwise, or the values of one tuple reduction (one reducer call)."""
    reduces = [b for b in bodies if isinstance(b, Reduce)]
    if not reduces or len(bodies) == 1:
        return
    first = reduces[0]
    if len(reduces) != len(bodies) or any(
            r.combiner is not first.combiner or r.value_index != i for i, r in enumerate(reduces)):
        raise ExprError(f"compute {name}: several outputs must all be elementwise or be the values of one "
                        "tuple reduction, in order")


def _arg_names(fcompute: Callable, ndim: int, name: str) -> list[str]:
    try:
        sig = inspect.signature(fcompute)
    except (TypeError, ValueError):
        return [f"i{d}" for d in range(ndim)]
    params = list(sig.parameters.values())
    if any(p.kind == p.VAR_POSITIONAL for p in params):
        return [f"i{d}" for d in range(ndim)]
    if len(params) != ndim:
        raise ExprError(f"compute {name}: fcompute takes {len(params)} arguments but the shape has {ndim} "
                        "dimensions")
    return [p.name for p in params]


def _check_reduce_top_level(body: E.Expr, name: str) -> None:
    class _Find(Visitor):
        def visit_Reduce(self, node: Reduce) -> None:
            raise ExprError(f"compute {name}: a reduction must be the whole body, not part of an expression")

    if isinstance(body, Reduce):
        for s in body.source:
            _Find().visit(s)
        _Find().visit(body.condition)
    else:
        _Find().visit(body)
