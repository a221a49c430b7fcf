"""Tensors, iteration variables and the tensor-read expression node.

A :class:`Tensor` is one output of an operation (placeholder or compute).  ``A[i, j]`` builds a
:class:`TensorRead` node, which lives in compute bodies until lowering replaces it by a
``BufferLoad``.  An :class:`IterVar` is a loop axis with a domain (:class:`Range`); it can be
used directly in expressions (it converts to its ``var``).
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from tunecli.engine.ir import expr as E
from tunecli.engine.ir.node import set_fields
from tunecli.engine.ir.printer import expr_str
from tunecli.engine.ir.simplify import simplify
from tunecli.errors import ExprError

if TYPE_CHECKING:
    from .operation import Operation

DATA_PAR = "data_par"
COMM_REDUCE = "comm_reduce"
ORDERED = "ordered"
OPAQUE = "opaque"
THREAD_INDEX = "thread_index"
THREAD_TAGS = ("blockIdx.x", "blockIdx.y", "blockIdx.z", "threadIdx.x", "threadIdx.y", "threadIdx.z",
               "vthread", "cthread")


class Range:
    """A half-open interval ``[min, min + extent)`` with expression endpoints."""

    __slots__ = ("min", "extent")

    def __init__(self, min: E.ExprLike, extent: E.ExprLike):
        self.min = E.convert(min)
        self.extent = E.convert(extent)

    @staticmethod
    def from_min_extent(min: E.ExprLike, extent: E.ExprLike) -> Range:
        """Build a range from its minimum and extent."""
        return Range(min, extent)

    def __repr__(self) -> str:
        return f"range(min={self.min}, ext={self.extent})"


class _ExprLike:
    """Arithmetic and comparison operators that delegate to ``self.as_expr()``."""

    def as_expr(self) -> E.Expr:  # pragma: no cover - overridden
        raise NotImplementedError

    def __add__(self, o): return self.as_expr() + o
    def __radd__(self, o): return E.convert(o) + self.as_expr()
    def __sub__(self, o): return self.as_expr() - o
    def __rsub__(self, o): return E.convert(o) - self.as_expr()
    def __mul__(self, o): return self.as_expr() * o
    def __rmul__(self, o): return E.convert(o) * self.as_expr()
    def __truediv__(self, o): return self.as_expr() / o
    def __rtruediv__(self, o): return E.convert(o) / self.as_expr()
    def __floordiv__(self, o): return self.as_expr() // o
    def __rfloordiv__(self, o): return E.convert(o) // self.as_expr()
    def __mod__(self, o): return self.as_expr() % o
    def __rmod__(self, o): return E.convert(o) % self.as_expr()
    def __neg__(self): return -self.as_expr()
    def __lt__(self, o): return self.as_expr() < o
    def __le__(self, o): return self.as_expr() <= o
    def __gt__(self, o): return self.as_expr() > o
    def __ge__(self, o): return self.as_expr() >= o
    def __eq__(self, o): return self.as_expr() == o  # type: ignore[override]
    def __ne__(self, o): return self.as_expr() != o  # type: ignore[override]
    def astype(self, dtype: str) -> E.Expr:
        """Return this value cast to ``dtype``."""
        return self.as_expr().astype(dtype)

    __hash__ = object.__hash__


class IterVar(_ExprLike):
    """A loop axis: ``var`` ranges over ``dom``; ``iter_type`` is data_par or comm_reduce.

    Parameters
    ----------
    dom : Range or None
        The domain (None for axes created by schedule relations before bound inference).
    var : Var
        The loop variable.
    iter_type : str
        ``data_par`` (spatial), ``comm_reduce`` (reduction), ``ordered`` or ``thread_index``
        (a thread axis from :func:`thread_axis`).
    thread_tag : str
        For thread axes: ``blockIdx.x`` ... ``threadIdx.z``, ``vthread``, ``cthread``; else "".
    """

    __slots__ = ("dom", "var", "iter_type", "thread_tag")

    def __init__(self, dom: Range | None, var: E.Var, iter_type: str = DATA_PAR, thread_tag: str = ""):
        self.dom = dom
        self.var = var
        self.iter_type = iter_type
        self.thread_tag = thread_tag

    @property
    def name(self) -> str:
        """Name of the variable / tensor."""
        return self.var.name

    @property
    def dtype(self) -> str:
        """dtype of the loop variable (int32)."""
        return self.var.dtype

    def as_expr(self) -> E.Var:
        """The loop variable (what ``ir.expr.convert`` uses)."""
        return self.var

    def __repr__(self) -> str:
        return f"iter_var({self.var.name}, {self.dom!r}, {self.iter_type})"


class ConstExtent(int):
    """A constant extent of a tensor's shape: an int that also answers the attributes of TVM's
    ``IntImm`` shape entries (``A.shape[0].value``, ``.dtype``), as older TVM scripts read them."""

    __slots__ = ()
    dtype = "int32"

    @property
    def value(self) -> int:
        """The extent as a plain int."""
        return int(self)

    def __reduce__(self) -> tuple[type, tuple[int]]:  # pickled as a plain int: caches and other
        return int, (int(self),)                        # processes need not know this class


def extent_value(extent: E.ExprLike) -> int | E.Expr:
    """An extent as an int (a :class:`ConstExtent`) when it is constant, else its (symbolic)
    integer expression."""
    if isinstance(extent, int):
        return ConstExtent(extent)
    e = E.convert(extent)
    return ConstExtent(e.value) if isinstance(e, E.IntImm) else e


def make_iter_var(lo: E.ExprLike, hi: E.ExprLike, name: str, iter_type: str) -> IterVar:
    """An IterVar over ``[lo, hi)`` with a fresh int32 variable."""
    lo_e, hi_e = E.convert(lo), E.convert(hi)
    if isinstance(lo_e, E.IntImm) and isinstance(hi_e, E.IntImm):
        extent: E.Expr = E.IntImm(hi_e.value - lo_e.value)
    else:
        extent = simplify(hi_e - lo_e)
    return IterVar(Range(lo_e, extent), E.Var(name, "int32"), iter_type)


def thread_axis(dom: Range | tuple[E.ExprLike, E.ExprLike] | str | None = None, tag: str = "",
                name: str = "") -> IterVar:
    """A GPU thread axis (TVM's ``te.thread_axis``), for ``Stage.bind``.

    ``thread_axis("blockIdx.x")``, ``thread_axis((0, 8), "threadIdx.x")``,
    ``thread_axis("vthread", name="vx")``.  ``dom`` (a range or ``(min, max)`` pair) is kept but
    not used by the CPU target: a bound loop keeps the extent bound inference gives it.

    Raises
    ------
    ExprError
        When the tag is missing or not one of ``blockIdx.x/y/z``, ``threadIdx.x/y/z``,
        ``vthread``, ``cthread``.
    """
    if isinstance(dom, str):
        tag, dom = dom, None
    if not tag:
        raise ExprError("thread_axis: the tag must be given, e.g. thread_axis(\"threadIdx.x\")")
    if tag not in THREAD_TAGS:
        raise ExprError(f"thread_axis: unknown thread tag {tag!r}; use one of {THREAD_TAGS}")
    rng = None
    if isinstance(dom, Range):
        rng = dom
    elif dom is not None:
        try:
            lo, hi = dom
        except (TypeError, ValueError) as exc:
            raise ExprError(f"thread_axis {tag}: dom must be a Range or a (min, max) pair, "
                            f"got {dom!r}") from exc
        rng = make_iter_var(lo, hi, tag, DATA_PAR).dom
    return IterVar(rng, E.Var(name or tag, "int32"), THREAD_INDEX, tag)


def _broadcasting(fn: Callable[[E.Expr, E.Expr], E.Expr], name: str, reflected: bool,
                  scalar: Callable[[Tensor, object], E.Expr]) -> Callable[[Tensor, object], E.Expr | Tensor]:
    """A Tensor operator: the broadcast elementwise ``fn`` of a tensor with dimensions and the other
    operand (a tensor or a number); ``scalar`` for a zero-dimensional tensor."""

    def method(self: Tensor, other: object) -> E.Expr | Tensor:
        if not self.shape:
            return scalar(self, other)
        from .broadcasting import broadcast_binary  # it builds computes, which import this module

        lhs, rhs = (other, self) if reflected else (self, other)
        return broadcast_binary(fn, lhs, rhs, name)  # type: ignore[arg-type]

    method.__name__ = name
    return method


class Tensor(_ExprLike):
    """Output ``value_index`` of ``op``: a multi-dimensional array of ``dtype`` with ``shape``."""

    __slots__ = ("op", "value_index", "shape", "dtype")

    def __init__(self, op: Operation, value_index: int, shape: Sequence[int], dtype: str):
        self.op = op
        self.value_index = value_index
        self.shape = tuple(extent_value(s) for s in shape)
        self.dtype = dtype

    @property
    def name(self) -> str:
        """Name of the variable / tensor."""
        return self.op.name if self.op.num_outputs == 1 else f"{self.op.name}.v{self.value_index}"

    @property
    def ndim(self) -> int:
        """Number of dimensions."""
        return len(self.shape)

    def __call__(self, *indices: E.ExprLike) -> E.Expr | TensorSlice:
        return self.__getitem__(tuple(indices))

    def __getitem__(self, indices: E.ExprLike | tuple[E.ExprLike, ...]) -> E.Expr | TensorSlice:
        if not isinstance(indices, tuple):
            indices = (indices,)
        if len(indices) < len(self.shape):
            return TensorSlice(self, tuple(indices))
        if len(indices) != len(self.shape):
            raise ExprError(
                f"tensor {self.name} has {len(self.shape)} dimensions but was indexed with {len(indices)}"
            )
        idx = []
        for i in indices:
            e = E.convert(i)
            if not E.parse_dtype(e.dtype).is_int:
                raise ExprError(f"index of tensor {self.name} must be an integer, got {e} ({e.dtype})")
            idx.append(e if e.dtype == "int32" else E.cast("int32", e))
        return TensorRead(self, tuple(idx))

    def as_expr(self) -> E.Expr:
        """A zero-dimensional tensor used as a scalar."""
        if self.shape:
            raise ExprError(f"tensor {self.name} with shape {self.shape} used as a scalar; index it")
        return TensorRead(self, ())

    def __repr__(self) -> str:
        return f"Tensor(name={self.name}, shape={self.shape}, dtype={self.dtype})"

    # ``a + b`` of tensors (or a tensor and a number): a broadcast elementwise tensor, as TVM's
    # tensors once topi is imported; a zero-dimensional tensor stays a scalar expression.
    __add__ = _broadcasting(operator.add, "add", False, _ExprLike.__add__)
    __radd__ = _broadcasting(operator.add, "add", True, _ExprLike.__radd__)
    __sub__ = _broadcasting(operator.sub, "subtract", False, _ExprLike.__sub__)
    __rsub__ = _broadcasting(operator.sub, "subtract", True, _ExprLike.__rsub__)
    __mul__ = _broadcasting(operator.mul, "multiply", False, _ExprLike.__mul__)
    __rmul__ = _broadcasting(operator.mul, "multiply", True, _ExprLike.__rmul__)
    __truediv__ = _broadcasting(operator.truediv, "divide", False, _ExprLike.__truediv__)
    __rtruediv__ = _broadcasting(operator.truediv, "divide", True, _ExprLike.__rtruediv__)

    def __eq__(self, other: object):  # type: ignore[override]
        if isinstance(other, Tensor):
            return self.op is other.op and self.value_index == other.value_index
        return self.as_expr() == other

    def __ne__(self, other: object):  # type: ignore[override]
        if isinstance(other, Tensor):
            return not self.__eq__(other)
        return self.as_expr() != other

    def __hash__(self) -> int:
        return hash((id(self.op), self.value_index))


class TensorRead(E.Expr):
    """``tensor[indices]`` inside a compute definition (becomes a BufferLoad when lowered)."""

    __slots__ = ("tensor", "indices")
    _fields = ("indices",)

    def __init__(self, tensor: Tensor, indices: tuple[E.Expr, ...]):
        set_fields(self, tensor=tensor, indices=tuple(indices), dtype=tensor.dtype)

    def text(self) -> str:
        """Printable form, e.g. ``A[i, k]``."""
        return f"{self.tensor.name}[{', '.join(expr_str(i) for i in self.indices)}]"


class TensorSlice(_ExprLike):
    """``A[i]`` of a multi-dimensional tensor: index it further (``A[i][j]``) before use."""

    def __init__(self, tensor: Tensor, indices: tuple[E.ExprLike, ...]):
        self.tensor = tensor
        self.indices = indices

    def __getitem__(self, more: E.ExprLike | tuple[E.ExprLike, ...]) -> E.Expr | TensorSlice:
        if not isinstance(more, tuple):
            more = (more,)
        return self.tensor[self.indices + more]

    def as_expr(self) -> E.Expr:
        raise ExprError(f"tensor {self.tensor.name} has {len(self.tensor.shape)} dimensions but was indexed "
                        f"with {len(self.indices)}")
