"""The lowered functions of a schedule by name: what TVM's ``tvm.lower`` returns (an ``IRModule``
of ``tir.PrimFunc``), with ``mod["main"]``, ``in``, iteration over the names, and the functions'
text from ``str(mod)``."""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from tunecli.engine.ir.stmt import PrimFunc
from tunecli.errors import LoweringError


class PrimModule:
    """Lowered functions (``PrimFunc``) by name.

    Parameters
    ----------
    functions : mapping of str to PrimFunc
    """

    def __init__(self, functions: Mapping[str, PrimFunc]) -> None:
        self.functions: dict[str, PrimFunc] = {}
        for name, func in functions.items():
            if not isinstance(func, PrimFunc):
                raise LoweringError(f"lowered module: {name!r} is a {type(func).__name__}, not a PrimFunc")
            self.functions[name] = func

    def __getitem__(self, name: object) -> PrimFunc:
        key = getattr(name, "name_hint", name)
        try:
            return self.functions[key]
        except KeyError:
            raise LoweringError(f"lowered module has no function {key!r}; it has {sorted(self.functions)}") \
                from None

    def __contains__(self, name: object) -> bool:
        return getattr(name, "name_hint", name) in self.functions

    def __iter__(self) -> Iterator[str]:
        return iter(self.functions)

    def __len__(self) -> int:
        return len(self.functions)

    def items(self) -> list[tuple[str, PrimFunc]]:
        """``(name, function)`` pairs."""
        return list(self.functions.items())

    @property
    def only(self) -> PrimFunc:
        """The module's function, when it holds exactly one (what ``build`` compiles)."""
        if len(self.functions) != 1:
            raise LoweringError(f"lowered module: expected one function, it has {sorted(self.functions)}")
        return next(iter(self.functions.values()))

    def script(self) -> str:
        """The functions' text, one after the other (``str(mod)``)."""
        return "\n\n".join(str(func) for func in self.functions.values())

    def __str__(self) -> str:
        return self.script()

    def __repr__(self) -> str:
        return f"PrimModule({', '.join(self.functions)})"
