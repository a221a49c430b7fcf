"""The body of the small tiled matmul templates of the tests (``autotvm_test/matmul``,
``measure_test/matmul``): TVM's unit-test matmul template."""

from __future__ import annotations

from typing import Any

from tunecli.engine import te
from tunecli.engine.schedule import create_schedule
from tunecli.engine.task.task import get_config


def split_matmul(n: int, l: int, m: int, dtype: str) -> tuple[Any, list]:
    """C = A @ B (``n x l`` by ``l x m``) with the split knobs ``tile_y`` and ``tile_x`` on C's two
    axes, the reduction between the outer and inner parts; call it inside a template."""
    A = te.placeholder((n, l), name="A", dtype=dtype)
    B = te.placeholder((l, m), name="B", dtype=dtype)
    k = te.reduce_axis((0, l), name="k")
    C = te.compute((n, m), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    s = create_schedule(C.op)
    y, x = s[C].op.axis
    cfg = get_config()
    cfg.define_split("tile_y", y, num_outputs=2)
    cfg.define_split("tile_x", x, num_outputs=2)
    yo, yi = cfg["tile_y"].apply(s, C, y)
    xo, xi = cfg["tile_x"].apply(s, C, x)
    s[C].reorder(yo, xo, k, yi, xi)
    return s, [A, B, C]
