"""tunecli.autotvm.measure.measure: measurement records and protocols (TVM's module path)."""

from tunecli.engine.measure import (
    Builder,
    BuildResult,
    MeasureErrorNo,
    MeasureInput,
    MeasureResult,
    Runner,
    create_measure_batch,
    measure_option,
)

__all__ = [
    "Builder", "BuildResult", "MeasureErrorNo", "MeasureInput", "MeasureResult", "Runner",
    "create_measure_batch", "measure_option",
]
