"""TVM-style ``target`` namespace: ``Target("llvm -mcpu=...")``, ``cuda()`` (re-exports of
tunecli.engine.target)."""

from tunecli.engine.target import Target, cuda

__all__ = ["Target", "cuda"]
