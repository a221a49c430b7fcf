"""Relations between iteration variables created by schedule primitives (split, fuse)."""

from __future__ import annotations

from dataclasses import dataclass

from tunecli.engine.te.tensor import IterVar


@dataclass(eq=False)
class Split:
    """``parent`` = ``outer * inner_extent + inner``; either ``factor`` or ``nparts`` is set."""

    parent: IterVar
    outer: IterVar
    inner: IterVar
    factor: int | None = None
    nparts: int | None = None


@dataclass(eq=False)
class Fuse:
    """``fused`` = ``outer * inner_extent + inner``."""

    outer: IterVar
    inner: IterVar
    fused: IterVar


Relation = Split | Fuse


def index_of(items: list[IterVar], iv: IterVar) -> int:
    """Position of ``iv`` in ``items`` by identity, or -1."""
    for n, x in enumerate(items):
        if x is iv:
            return n
    return -1
