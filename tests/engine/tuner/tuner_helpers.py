"""A real template and a cheap, deterministic measurement for the tuner tests.

``SyntheticMeasure`` follows the ``measure_batch(inputs) -> results`` protocol of
``tunecli.engine.measure``: it *builds* every config for real (instantiate the template and
lower it, so invalid configs fail as they would) and then *runs* it on a kernel cost model — a
formula of the tile sizes with a single optimum — instead of timing machine code, so tuners
can be tested in milliseconds.
"""

from __future__ import annotations

import math
import traceback
from typing import Any

from tunecli.engine import te
from tunecli.engine.build import lower
from tunecli.engine.measure.result import MeasureErrorNo, MeasureResult
from tunecli.engine.schedule import create_schedule
from tunecli.engine.task.task import create, get_config, template
from tunecli.errors import InstantiationError


@template("tuner_test/matmul")
def matmul(n: int, parts: int) -> tuple[Any, list]:
    """A tiled matmul: ``parts``-way splits of both spatial axes and an unroll knob."""
    A = te.placeholder((n, n), name="A")
    B = te.placeholder((n, n), name="B")
    k = te.reduce_axis((0, n), name="k")
    C = te.compute((n, n), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    s = create_schedule(C.op)
    y, x = s[C].op.axis
    cfg = get_config()
    cfg.define_split("tile_y", y, num_outputs=parts)
    cfg.define_split("tile_x", x, num_outputs=parts)
    cfg.define_knob("unroll", [0, 1])
    ys = cfg["tile_y"].apply(s, C, y)
    xs = cfg["tile_x"].apply(s, C, x)
    s[C].reorder(*ys[:-1], *xs[:-1], k, ys[-1], xs[-1])
    if cfg["unroll"].val:
        s[C].unroll(xs[-1])
    if cfg["tile_x"].size[-1] > 32:
        cfg.raise_error("inner tile too wide")
    return s, [A, B, C]


def kernel_cost(config: Any) -> float:
    """Seconds of the modelled kernel: best with inner tiles 4 x 8, unrolled."""
    y, x = config["tile_y"].size, config["tile_x"].size
    penalty = (math.log2(y[-1]) - 2) ** 2 + (math.log2(x[-1]) - 3) ** 2
    penalty += 0.25 * sum((math.log2(v) - 1) ** 2 for v in y[1:-1] + x[1:-1])
    return 1e-3 * (1.0 + penalty) * (0.8 if config["unroll"].val else 1.0)


class SyntheticMeasure:
    """``measure_batch``: builds each config for real, then costs it with ``kernel_cost``."""

    def __init__(self, n_parallel: int = 4, fail_all: bool = False):
        self.n_parallel = n_parallel
        self.fail_all = fail_all
        self.measured: list[int] = []

    def __call__(self, inputs: list) -> list[MeasureResult]:
        results = []
        for inp in inputs:
            self.measured.append(inp.config.index)
            stamp = float(len(self.measured))
            try:
                if self.fail_all:
                    raise InstantiationError("every config fails in this measurement")
                sch, args = inp.task.instantiate(inp.config)
                if not inp.config.valid():
                    raise InstantiationError("; ".join(inp.config.errors))
                lower(sch, args)
            except InstantiationError as err:
                results.append(MeasureResult((traceback.format_exc(), err),
                                             MeasureErrorNo.INSTANTIATION_ERROR, 0.01, stamp))
                continue
            cost = kernel_cost(inp.config)
            results.append(MeasureResult((cost,), MeasureErrorNo.NO_ERROR, cost, stamp))
        return results


def make_task(n: int = 64, parts: int = 3) -> Any:
    """The tuning task of ``tuner_test/matmul`` (64, 3): 28 x 28 x 2 = 1568 configs."""
    return create("tuner_test/matmul", (n, parts), "llvm")


class StreamingMeasure(SyntheticMeasure):
    """``SyntheticMeasure`` that also hands results to ``on_result(index, result)`` before the
    batch returns, like ``create_measure_batch``; ``probe()`` runs after each hand-over.

    ``order`` lists the batch positions reported, in report order (a callable of the batch
    size); positions left out are not reported through the hook, repeated ones are reported twice.
    """

    reports_each_result = True  # declares that it takes ``on_result``

    def __init__(self, n_parallel: int = 4, probe: Any = None, order: Any = None):
        super().__init__(n_parallel)
        self.probe = probe
        self.order = order or (lambda n: list(range(n)))

    def __call__(self, inputs: list, on_result: Any = None) -> list[MeasureResult]:
        results = super().__call__(inputs)
        for index in self.order(len(inputs)):
            if on_result is not None:
                on_result(index, results[index])
            if self.probe is not None:
                self.probe()
        return results
