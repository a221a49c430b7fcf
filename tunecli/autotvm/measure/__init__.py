"""``tunecli.autotvm.measure``: TVM's ``autotvm.measure`` names (re-exported from the engine)."""

from tunecli.autotvm.measure import measure_methods
from tunecli.engine.measure import (
    Builder,
    BuildResult,
    LocalBuilder,
    LocalRunner,
    MeasureErrorNo,
    MeasureInput,
    MeasureResult,
    Runner,
    create_measure_batch,
    measure_option,
)
from tunecli.engine.rpc.device_session import request_remote

__all__ = [
    "Builder",
    "BuildResult",
    "LocalBuilder",
    "LocalRunner",
    "MeasureErrorNo",
    "MeasureInput",
    "MeasureResult",
    "Runner",
    "create_measure_batch",
    "measure_methods",
    "measure_option",
    "request_remote",
]
