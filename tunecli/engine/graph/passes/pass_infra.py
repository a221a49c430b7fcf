"""Pass infrastructure (TVM's ``tvm.transform``): :class:`Pass`, :class:`Sequential`, :class:`PassContext`.

A pass maps an :class:`IRModule` to a new one (``pass_(mod)``); it has a name and the lowest
``opt_level`` at which a :class:`Sequential` runs it.  ``PassContext.current()`` is the innermost
``with PassContext(opt_level=3, disabled_pass=[...])`` (opt_level 2 outside any), read by
``Sequential`` and by the passes whose behaviour depends on the level (``FuseOps``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

from tunecli.errors import GraphError

from ..ir_module import IRModule
from ..type_infer import infer_types

if TYPE_CHECKING:
    from ..graph_expr import Function


class PassContext:
    """The optimization settings passes read (TVM's ``tvm.transform.PassContext``).

    Parameters
    ----------
    opt_level : int
        0 to 3; a pass runs when its own level is at most this.
    required_pass, disabled_pass : sequence of str
        Pass names always run / never run.
    config : mapping, optional
        Extra settings (kept; none is read yet).
    """

    _stack: list[PassContext] = []

    def __init__(
        self,
        opt_level: int = 2,
        required_pass: Sequence[str] | None = None,
        disabled_pass: Sequence[str] | None = None,
        config: Mapping[str, object] | None = None,
        instruments: Sequence[object] | None = None,
        trace: object = None,
    ) -> None:
        if not isinstance(opt_level, int) or not 0 <= opt_level <= 4:
            raise GraphError(f"PassContext: opt_level must be an int from 0 to 4, got {opt_level!r}")
        self.opt_level = opt_level
        self.required_pass = frozenset(required_pass or ())
        self.disabled_pass = frozenset(disabled_pass or ())
        self.config = dict(config or {})

    @staticmethod
    def current() -> PassContext:
        """The innermost active context (a default one at opt_level 2 outside any)."""
        return PassContext._stack[-1] if PassContext._stack else _DEFAULT

    def pass_enabled(self, p: Pass) -> bool:
        """Whether ``p`` runs under this context."""
        if p.name in self.disabled_pass:
            return False
        return p.name in self.required_pass or p.opt_level <= self.opt_level

    def __enter__(self) -> PassContext:
        PassContext._stack.append(self)
        return self

    def __exit__(self, *exc: object) -> None:
        PassContext._stack.remove(self)

    def __repr__(self) -> str:
        return f"PassContext(opt_level={self.opt_level})"


_DEFAULT = PassContext()


class Pass:
    """A module-to-module transformation with a name and an optimization level.

    Parameters
    ----------
    func : callable
        ``func(mod) -> IRModule``.
    name : str
    opt_level : int
    """

    def __init__(self, func: Callable[[IRModule], IRModule], name: str, opt_level: int = 0):
        self.func = func
        self.name = name
        self.opt_level = opt_level

    def __call__(self, mod: IRModule) -> IRModule:
        if not isinstance(mod, IRModule):
            raise GraphError(f"pass {self.name}: expected an IRModule, got {type(mod).__name__}")
        return self.func(mod)

    def __repr__(self) -> str:
        return f"{self.name}(opt_level={self.opt_level})"


class Sequential(Pass):
    """Passes run in order, each only when the current :class:`PassContext` enables it.

    Parameters
    ----------
    passes : sequence of Pass
    opt_level : int
    name : str
    """

    def __init__(self, passes: Iterable[Pass] = (), opt_level: int = 0, name: str = "sequential"):
        self.passes = list(passes)
        super().__init__(self._run, name, opt_level)

    def _run(self, mod: IRModule) -> IRModule:
        ctx = PassContext.current()
        for p in self.passes:
            if ctx.pass_enabled(p):
                mod = p(mod)
        return mod


def function_pass(name: str, opt_level: int, rewrite: Callable[[Function], Function]) -> Pass:
    """A pass applying ``rewrite(fn) -> Function`` to every function of a module, then typing it."""

    def run(mod: IRModule) -> IRModule:
        out = {}
        for key, fn in mod.functions.items():
            new = rewrite(fn)
            infer_types(new)
            out[key] = new
        return IRModule(out)

    return Pass(run, name, opt_level)
