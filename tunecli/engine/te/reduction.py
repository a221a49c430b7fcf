"""Reductions: reduce_axis, the Reduce expression node, commutative reducers (sum, max, min)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from tunecli.engine.ir import expr as E
from tunecli.engine.ir.node import set_fields
from tunecli.engine.ir.printer import expr_str
from tunecli.engine.ir.visitor import post_order, substitute
from tunecli.errors import ExprError

from .tensor import COMM_REDUCE, IterVar, Range, make_iter_var


def symbolic_hint(value: E.Expr) -> str:
    """The note an error about a non-constant extent adds when it holds a variable (``te.var``)."""
    found: list[object] = []
    post_order(value, lambda node: found.append(node) if isinstance(node, E.Var) else None)
    if found:
        return ("; symbolic sizes (te.var) are not supported: shapes are fixed when the schedule is written, "
                "so declare one computation per size")
    return ""


def reduce_axis(dom: tuple[E.ExprLike, E.ExprLike] | Range, name: str = "rv") -> IterVar:
    """A reduction axis over ``dom``, a ``(lo, hi)`` pair or a Range.

    Parameters
    ----------
    dom : tuple of (int, int) or Range
        The values the axis takes: ``lo <= k < hi``.
    name : str
        Name of the axis variable.

    Returns
    -------
    IterVar
        An axis of iter_type ``comm_reduce``.
    """
    if isinstance(dom, Range):
        return IterVar(dom, E.Var(name, "int32"), COMM_REDUCE)
    if not isinstance(dom, (tuple, list)) or len(dom) != 2:
        raise ExprError(f"reduce_axis {name}: domain must be (lo, hi), got {dom!r}")
    lo, hi = E.convert(dom[0]), E.convert(dom[1])
    if not isinstance(lo, E.IntImm) or not isinstance(hi, E.IntImm):
        if symbolic_hint(hi if not isinstance(hi, E.IntImm) else lo):
            return make_iter_var(lo, hi, name, COMM_REDUCE)
        raise ExprError(f"reduce_axis {name}: bounds must be integer constants, got {dom!r}"
                        f"{symbolic_hint(hi if not isinstance(hi, E.IntImm) else lo)}")
    if hi.value <= lo.value:
        raise ExprError(f"reduce_axis {name}: empty domain {dom!r}")
    return make_iter_var(lo, hi, name, COMM_REDUCE)


class CommReducer:
    """A commutative reducer: ``result`` combines ``lhs`` (accumulator) and ``rhs`` (new value)."""

    def __init__(self, lhs: Sequence[E.Var], rhs: Sequence[E.Var], result: Sequence[E.Expr],
                 identity_element: Sequence[E.Expr], name: str = "reduce"):
        self.lhs = tuple(lhs)
        self.rhs = tuple(rhs)
        self.result = tuple(result)
        self.identity_element = tuple(identity_element)
        self.name = name

    def combine(self, acc: E.Expr, value: E.Expr) -> E.Expr:
        """The combined value of accumulator ``acc`` and ``value``."""
        return substitute(self.result[0], {self.lhs[0]: acc, self.rhs[0]: value})

    def combine_all(self, accs: Sequence[E.Expr], values: Sequence[E.Expr]) -> list[E.Expr]:
        """Every combined value of the accumulators ``accs`` and ``values`` (a tuple reduction's:
        each may read all of them)."""
        mapping = dict(zip(self.lhs, accs, strict=True))
        mapping.update(zip(self.rhs, values, strict=True))
        return [substitute(r, mapping) for r in self.result]

    def __repr__(self) -> str:
        return f"comm_reducer({self.name})"


class Reduce(E.Expr):
    """Reduction of ``source`` over ``axis`` with ``combiner`` where ``condition`` holds."""

    __slots__ = ("combiner", "source", "axis", "condition", "value_index", "init")
    _fields = ("source", "condition", "init")

    def __init__(self, combiner: CommReducer, source: Sequence[E.Expr], axis: Sequence[IterVar],
                 condition: E.Expr, value_index: int = 0, init: Sequence[E.Expr] = ()):
        set_fields(self, combiner=combiner, source=tuple(source), axis=tuple(axis), condition=condition,
              value_index=value_index, init=tuple(init), dtype=source[value_index].dtype)

    def text(self) -> str:
        """Printable form, e.g. ``sum((A[i, k] * B[k, j]), axis=[k])``."""
        axes = ", ".join(iv.var.name for iv in self.axis)
        cond = "" if is_const_true(self.condition) else f", where={expr_str(self.condition)}"
        return f"{self.combiner.name}({expr_str(self.source[self.value_index])}, axis=[{axes}]{cond})"


def is_const_true(e: E.Expr) -> bool:
    """Whether ``e`` is the constant true (a reduction's condition when it has none)."""
    return isinstance(e, E.IntImm) and e.value == 1


def comm_reducer(fcombine: Callable, fidentity: Callable, name: str = "reduce") -> Callable:
    """Make a reducer from a combining function and an identity function of the dtype.

    Parameters
    ----------
    fcombine : callable
        ``fcombine(x, y) -> expr``; x is the accumulator.
    fidentity : callable
        ``fidentity(dtype) -> expr``, the identity element.
    name : str
        Name shown when printing.

    Returns
    -------
    callable
        ``reducer(expr, axis, where=None, init=None)``; called with two expressions instead of an
        axis it combines them directly (so ``te.max(a, b)`` is elementwise).
    """

    def reducer(expr: E.ExprLike, axis: IterVar | Sequence[IterVar] | E.ExprLike,
                where: E.ExprLike | None = None, init: E.ExprLike | None = None, *args: E.ExprLike) -> E.Expr:
        if isinstance(axis, IterVar) or (isinstance(axis, (list, tuple)) and axis
                                         and all(isinstance(a, IterVar) for a in axis)):
            if args:
                raise ExprError(f"{name}: unexpected extra arguments {args!r}")
            return _make_reduce(expr, axis, where, init)
        values = [expr, axis] + ([where] if where is not None else []) + list(args)
        out = E.convert(values[0])
        for v in values[1:]:
            out = _as_expr(fcombine(out, E.convert(v)))
        return out

    def _make_reduce(expr: E.ExprLike | Sequence[E.ExprLike], axis: IterVar | Sequence[IterVar],
                     where: E.ExprLike | None, init: E.ExprLike | Sequence[E.ExprLike] | None
                     ) -> Reduce | tuple[Reduce, ...]:
        is_tuple = isinstance(expr, (list, tuple))
        sources = [E.convert(e) for e in (expr if is_tuple else [expr])]
        if any(isinstance(src, Reduce) for src in sources):
            raise ExprError(f"{name}: cannot nest a reduction inside another reduction")
        axes = [axis] if isinstance(axis, IterVar) else list(axis)
        for a in axes:
            if a.iter_type != COMM_REDUCE:
                raise ExprError(f"{name}: axis {a.var.name} is not a reduce_axis")
        dtypes = [src.dtype for src in sources]
        lhs = [E.Var(f"x{i}" if is_tuple else "x", dt) for i, dt in enumerate(dtypes)]
        rhs = [E.Var(f"y{i}" if is_tuple else "y", dt) for i, dt in enumerate(dtypes)]
        results = _as_exprs(fcombine(tuple(lhs), tuple(rhs)) if is_tuple else fcombine(lhs[0], rhs[0]),
                            len(sources), f"{name}: the combining function")
        identities = _as_exprs(fidentity(*dtypes), len(sources), f"{name}: the identity function")
        combiner = CommReducer(lhs, rhs, [E.cast(dt, r) for dt, r in zip(dtypes, results, strict=True)],
                               [E.cast(dt, e) for dt, e in zip(dtypes, identities, strict=True)], name)
        condition = E.IntImm(1, "bool") if where is None else E.convert(where)
        if condition.dtype != "bool":
            raise ExprError(f"{name}: where= must be a boolean expression, got {condition.dtype}")
        inits: tuple[E.Expr, ...] = ()
        if init is not None:
            given = _as_exprs(init if is_tuple else [init], len(sources), f"{name}: init=")
            inits = tuple(E.cast(dt, e) for dt, e in zip(dtypes, given, strict=True))
        reduces = tuple(Reduce(combiner, sources, axes, condition, i, inits) for i in range(len(sources)))
        return reduces if is_tuple else reduces[0]

    reducer.__name__ = name
    reducer.__doc__ = f"Reduce with {name} over the given axes (or combine two values)."
    return reducer


def _as_expr(value: E.ExprLike) -> E.Expr:
    return E.convert(value)


def _as_exprs(values: E.ExprLike | Sequence[E.ExprLike], count: int, what: str) -> list[E.Expr]:
    """``values`` as ``count`` expressions (one value for a reduction of one expression)."""
    items = list(values) if isinstance(values, (list, tuple)) else [values]
    if len(items) != count:
        raise ExprError(f"{what} gave {len(items)} values for a reduction of {count}")
    return [E.convert(v) for v in items]


def _max(a: E.Expr, b: E.Expr) -> E.Expr:
    return E._binary(E.Max, a, b)


def _min(a: E.Expr, b: E.Expr) -> E.Expr:
    return E._binary(E.Min, a, b)


sum = comm_reducer(lambda x, y: x + y, lambda t: E.const(0, t), name="sum")  # noqa: A001
max = comm_reducer(_max, E.min_value, name="max")  # noqa: A001
min = comm_reducer(_min, E.max_value, name="min")  # noqa: A001
