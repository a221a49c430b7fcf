"""IRModule: the named functions of a network (TVM's ``tvm.IRModule``); ``mod["main"]`` is the entry."""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from tunecli.errors import GraphError

from .graph_expr import Expr, Function
from .graph_printer import astext
from .traversal import free_vars


class IRModule:
    """Functions by name.

    Parameters
    ----------
    functions : mapping of str to Function, optional
    """

    def __init__(self, functions: Mapping[str, Function] | None = None):
        self.functions: dict[str, Function] = {}
        for name, fn in (functions or {}).items():
            self[name] = fn

    @staticmethod
    def from_expr(expr: Expr, functions: Mapping[str, Function] | None = None) -> IRModule:
        """A module whose ``"main"`` is ``expr`` (a Function, or an expression wrapped in a function
        of its free variables), as TVM's ``IRModule.from_expr``."""
        if not isinstance(expr, Expr):
            raise GraphError(f"IRModule.from_expr: expected a graph expression, got {type(expr).__name__}")
        main = expr if isinstance(expr, Function) else Function(free_vars(expr), expr)
        return IRModule({**(functions or {}), "main": main})

    def __getitem__(self, name: str) -> Function:
        key = getattr(name, "name_hint", name)
        try:
            return self.functions[key]
        except KeyError:
            raise GraphError(f"IRModule has no function {key!r}; it has {sorted(self.functions)}") from None

    def __setitem__(self, name: str, fn: Function) -> None:
        if not isinstance(fn, Function):
            raise GraphError(f"IRModule[{name!r}]: expected a Function, got {type(fn).__name__}")
        self.functions[getattr(name, "name_hint", name)] = fn

    def __contains__(self, name: object) -> bool:
        return getattr(name, "name_hint", name) in self.functions

    def __iter__(self) -> Iterator[str]:
        return iter(self.functions)

    def __len__(self) -> int:
        return len(self.functions)

    def astext(self, show_meta_data: bool = True) -> str:
        """The module as text (what ``print(mod)`` shows); ``show_meta_data`` is TVM's argument
        (constants print as their shape and dtype either way)."""
        return astext(self.functions)

    def __str__(self) -> str:
        return self.astext()

    def __repr__(self) -> str:
        return f"IRModule({', '.join(self.functions)})"
