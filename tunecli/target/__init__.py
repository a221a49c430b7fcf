"""TVM-style ``target`` namespace: ``Target("llvm -mcpu=...")`` (re-export of tunecli.engine.target)."""

from tunecli.engine.target import Target

__all__ = ["Target"]
