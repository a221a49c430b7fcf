"""FoldConstant: every call whose arguments are all constants becomes a constant (computed once,
at build time, by the operator's numpy reference), as do tuple reads of constant tuples.

With the weights bound as constants (``bind_params``) this is where weight transformations
(batch-norm scales folded into weights, layout transforms and packing) happen: once, never per
inference.
"""

from __future__ import annotations

from collections.abc import Mapping

from ..graph_expr import ArrayData, Call, Constant, Expr, Function, Tuple, TupleGetItem, Var
from ..op_registry import Op
from ..traversal import ExprMutator
from .pass_infra import Pass, function_pass


class _Fold(ExprMutator):
    def visit_call(self, call: Call) -> Expr:
        new = super().visit_call(call)
        if (
            isinstance(new, Call)
            and isinstance(new.op, Op)
            and all(isinstance(a, Constant) or _constant_tuple(a) for a in new.args)
        ):
            args = [a.data if isinstance(a, Constant) else tuple(f.data for f in a.fields) for a in new.args]
            out = new.op.reference(new.attrs, *args)
            if not isinstance(out, tuple):
                return Constant(out)
        return new

    def visit_tuple_getitem(self, item: TupleGetItem) -> Expr:
        value = self.visit(item.tuple_value)
        if isinstance(value, Tuple):
            return value.fields[item.index]
        return item if value is item.tuple_value else TupleGetItem(value, item.index)


def _constant_tuple(e: Expr) -> bool:
    return isinstance(e, Tuple) and all(isinstance(f, Constant) for f in e.fields)


def fold_constant(fn: Function) -> Function:
    """``fn`` with its constant subexpressions evaluated."""
    return _Fold().visit(fn)  # type: ignore[return-value]


def FoldConstant() -> Pass:  # noqa: N802 - TVM's name
    """The pass (TVM's ``relay.transform.FoldConstant()``)."""
    return function_pass("FoldConstant", 2, fold_constant)


def bind_params(fn: Function, params: Mapping[str, ArrayData]) -> Function:
    """``fn`` with the parameters named in ``params`` replaced by constants (TVM's
    ``bind_params_by_name``); the remaining parameters stay inputs, in their order."""
    by_name: dict[str, Var] = {}
    for p in fn.params:
        by_name.setdefault(p.name_hint, p)
    binding = {by_name[k]: Constant(v) for k, v in params.items() if k in by_name}

    class _Bind(ExprMutator):
        def visit_var(self, var: Var) -> Expr:
            return binding.get(var, var)

    body = _Bind().visit(fn.body)
    return Function([p for p in fn.params if p not in binding], body, fn.ret_type, attrs=fn.attrs)
