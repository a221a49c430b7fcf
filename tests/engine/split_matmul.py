"""The body of the small tiled matmul templates of the tests (``autotvm_test/matmul``,
``measure_test/matmul``): the sample template of ``tvm.testing.autotvm`` (``testing/matmul``)."""

from __future__ import annotations

from typing import Any

from tunecli.testing.autotvm import matmul


def split_matmul(n: int, l: int, m: int, dtype: str) -> tuple[Any, list]:
    """C = A @ B (``n x l`` by ``l x m``) with the split knobs ``tile_y`` and ``tile_x`` on C's two
    axes, the reduction between the outer and inner parts; call it inside a template (it takes
    that template's config)."""
    return matmul.__wrapped__(n, l, m, dtype)
