"""TVM's ``tvm.testing.autotvm``: a sample task, sample records and a runner that times nothing.

``get_sample_task(n)`` is the ``testing/matmul`` template (an ``n``-cubed matmul with two
two-way splits: 64 configs at ``n=128``) on ``llvm``; ``get_sample_records(n)`` gives ``n``
(input, result) pairs over its configs, the ``i``-th costing ``i + 1`` seconds; ``DummyRunner``
answers every measurement with a random cost below a second, so tuners can be driven without
timing kernels.  ``testing/bad_matmul`` computes a wrong product on a target with the key
``bad_device`` (a reduction one element short), the matmul elsewhere.
"""

from __future__ import annotations

import random
import time
from collections.abc import Sequence

from tunecli import te
from tunecli.engine.measure.builder import BuildResult
from tunecli.engine.measure.result import MeasureErrorNo, MeasureInput, MeasureResult
from tunecli.engine.measure.runner import OnResult, Runner
from tunecli.engine.schedule import Schedule
from tunecli.engine.target import Target
from tunecli.engine.task.task import Task, create, get_config, template


class DummyRunner(Runner):
    """A runner that measures nothing: every input gets one random cost in [0, 1) seconds."""

    def __init__(self) -> None:
        super().__init__(1, 1)

    def run(self, measure_inputs: Sequence[MeasureInput],
            build_results: Sequence[BuildResult | MeasureResult],
            on_result: OnResult | None = None) -> list[MeasureResult]:
        """One successful result with a random cost per input (builds are not looked at)."""
        return [MeasureResult((random.random(),), MeasureErrorNo.NO_ERROR, 0.2, time.time())
                for _ in measure_inputs]

    def get_build_kwargs(self) -> dict:
        """No device options."""
        return {}


def _product(n: int, l: int, m: int, dtype: str,
             depth: int) -> tuple[te.Tensor, te.Tensor, te.Tensor, Schedule]:
    """``C[i, j] = sum_k A[i, k] * B[k, j]`` over the first ``depth`` values of ``k``."""
    a = te.placeholder((n, l), name="A", dtype=dtype)
    b = te.placeholder((l, m), name="B", dtype=dtype)
    k = te.reduce_axis((0, depth), name="k")
    c = te.compute((n, m), lambda i, j: te.sum(a[i, k] * b[k, j], axis=k), name="C")
    return a, b, c, te.create_schedule(c.op)


@template("testing/matmul")
def matmul(N: int, L: int, M: int, dtype: str) -> tuple[Schedule, list[te.Tensor]]:  # noqa: N803 - TVM's names
    """An ``N x L`` by ``L x M`` product; knobs ``tile_y`` and ``tile_x`` split its two axes."""
    a, b, c, s = _product(N, L, M, dtype, L)
    row, col = s[c].op.axis
    (red,) = s[c].op.reduce_axis
    cfg = get_config()
    cfg.define_split("tile_y", row, num_outputs=2)
    cfg.define_split("tile_x", col, num_outputs=2)
    row_out, row_in = cfg["tile_y"].apply(s, c, row)
    col_out, col_in = cfg["tile_x"].apply(s, c, col)
    s[c].reorder(row_out, col_out, red, row_in, col_in)
    return s, [a, b, c]


@template("testing/bad_matmul")
def bad_matmul(N: int, L: int, M: int, dtype: str) -> tuple[Schedule, list[te.Tensor]]:  # noqa: N803 - TVM's names
    """``testing/matmul``, except on a ``bad_device`` target, where the sum skips the last ``k``."""
    target = Target.current()
    if target is None or "bad_device" not in target.keys:
        return matmul(N, L, M, dtype)
    a, b, c, s = _product(N, L, M, dtype, L - 1)
    row, col = s[c].op.axis
    cfg = get_config()
    cfg.define_split("tile_y", row, num_outputs=2)
    cfg.define_split("tile_x", col, num_outputs=2)
    return s, [a, b, c]


def get_sample_task(n: int = 128) -> tuple[Task, Target]:
    """The ``testing/matmul`` task of an ``n``-cubed float32 product on ``llvm``, and its target."""
    target = Target("llvm")
    return create("testing/matmul", args=(n, n, n, "float32"), target=target), target


def get_sample_records(n: int) -> list[tuple[MeasureInput, MeasureResult]]:
    """``n`` records of the sample task: the ``i``-th measures config ``i`` (modulo the space) at
    ``i + 1`` seconds."""
    task, target = get_sample_task()
    size = len(task.config_space)
    return [(MeasureInput(target, task, task.config_space.get(i % size)),
             MeasureResult((i + 1,), MeasureErrorNo.NO_ERROR, i, time.time())) for i in range(n)]


__all__ = ["DummyRunner", "bad_matmul", "get_sample_records", "get_sample_task", "matmul"]
