"""The records of one measurement: what was measured (input) and what came out (result)."""

from __future__ import annotations

from collections import namedtuple
from enum import IntEnum


class MeasureErrorNo(IntEnum):
    """Outcome of a measurement, with TVM's numbers (stored in logs)."""

    NO_ERROR = 0
    INSTANTIATION_ERROR = 1
    COMPILE_HOST = 2
    COMPILE_DEVICE = 3
    RUNTIME_DEVICE = 4
    WRONG_ANSWER = 5
    BUILD_TIMEOUT = 6
    RUN_TIMEOUT = 7
    UNKNOWN_ERROR = 8


MeasureInput = namedtuple("MeasureInput", ["target", "task", "config"])
MeasureInput.__doc__ = """What to measure: a target, a Task and a ConfigEntity of its space."""



class MeasureResult(namedtuple("MeasureResult", ["costs", "error_no", "all_cost", "timestamp"])):
    """A measurement: costs in seconds (or ``(traceback, error)``), a MeasureErrorNo, total
    seconds spent (build + run) and the unix time it finished."""

    __slots__ = ()

    def __repr__(self) -> str:
        err = self.error_no
        err_text = f"MeasureErrorNo.{err.name}" if isinstance(err, MeasureErrorNo) else str(err)
        return (f"MeasureResult(costs={self.costs!r}, error_no={err_text}, all_cost={self.all_cost}, "
                f"timestamp={self.timestamp!r})")
