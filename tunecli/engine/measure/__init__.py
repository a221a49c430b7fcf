"""Measurement: build candidates in worker processes, time them in another (TVM's autotvm.measure).

See ``batch`` (``measure_option``, ``create_measure_batch``), ``builder`` (``LocalBuilder``),
``runner`` (the ``Runner`` protocol), ``local_runner`` (``LocalRunner``), ``timing_options``
(``TimingOptions``, how kernels are timed), ``timing`` (``measure_object``, shared with the RPC
device server) and ``worker`` (persistent, replaceable worker processes).
"""

from tunecli.engine.measure.batch import create_measure_batch, measure_option
from tunecli.engine.measure.builder import Builder, BuildResult, LocalBuilder
from tunecli.engine.measure.local_runner import LocalRunner
from tunecli.engine.measure.result import MeasureErrorNo, MeasureInput, MeasureResult
from tunecli.engine.measure.runner import Runner
from tunecli.engine.measure.timing_options import TimingOptions

__all__ = [
    "Builder",
    "BuildResult",
    "LocalBuilder",
    "LocalRunner",
    "MeasureErrorNo",
    "MeasureInput",
    "MeasureResult",
    "Runner",
    "TimingOptions",
    "create_measure_batch",
    "measure_option",
]
