"""TVM-style ``target`` namespace: ``Target("llvm -mcpu=...")``, ``cuda()`` (re-exports of
tunecli.engine.target), and the AutoTVM era's ``create`` and ``current_target``."""

from tunecli.engine.target import Target, cuda


def create(target: str | Target) -> Target:
    """TVM's older ``tvm.target.create("llvm -mcpu=...")``: the same as ``Target(target)``."""
    return Target(target)


def current_target(allow_none: bool = True) -> Target | None:
    """TVM's older ``tvm.target.current_target()``: the target of the innermost ``with target:``
    block (see :meth:`Target.current`)."""
    return Target.current(allow_none)


__all__ = ["Target", "create", "cuda", "current_target"]
