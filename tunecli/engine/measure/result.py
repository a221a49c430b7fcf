"""The records of one measurement: what was measured (input) and what came out (result)."""

from __future__ import annotations

import math
import time
from collections import namedtuple
from enum import IntEnum
from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from tunecli.errors import TuneError

if TYPE_CHECKING:
    from tunecli.engine.target import Target
    from tunecli.engine.task.space import ConfigEntity
    from tunecli.engine.task.task import Task


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


class MeasureInput(NamedTuple):
    """What to measure: a target, a Task and a ConfigEntity of its space."""

    target: Target
    task: Task
    config: ConfigEntity


class MeasureResult(namedtuple("MeasureResult", ["costs", "error_no", "all_cost", "timestamp"])):
    """A measurement: costs in seconds, a MeasureErrorNo, total seconds spent (build + run) and
    the unix time it finished.

    A failed measurement made in this process carries ``(message or traceback, exception)`` as
    its costs (read them with :attr:`error_message` and :attr:`error`); one read from a log
    carries TVM's placeholder cost. Ask :attr:`ok` whether it succeeded, :attr:`mean_cost` and
    :meth:`gflops` how fast it ran.
    """

    __slots__ = ()

    @classmethod
    def failure(cls, error_no: MeasureErrorNo, message: str, all_cost: float,
                error: BaseException | None = None) -> MeasureResult:
        """A failed measurement that finished now.

        Parameters
        ----------
        error_no : MeasureErrorNo
            What kind of failure (not NO_ERROR).
        message : str
            What went wrong (a message or a traceback).
        all_cost : float
            Seconds spent on it.
        error : BaseException, optional
            The exception behind it (default: a TuneError carrying ``message``).
        """
        return cls((message, error if error is not None else TuneError(message)), error_no, all_cost,
                   time.time())

    @property
    def ok(self) -> bool:
        """True when the kernel was measured (``error_no`` is NO_ERROR)."""
        return self.error_no == MeasureErrorNo.NO_ERROR

    @property
    def mean_cost(self) -> float:
        """Mean seconds per call; ``inf`` for a failed measurement."""
        if not self.ok or not self.costs:
            return math.inf
        return float(np.mean(self.costs))

    def flops(self, flop: float | None) -> float:
        """Floating-point operations per second for a kernel of ``flop`` operations (0 on failure).

        Parameters
        ----------
        flop : float or None
            The task's FLOP count; None or 0 gives 0.
        """
        cost = self.mean_cost
        return float(flop) / cost if flop and 0 < cost < math.inf else 0.0

    def gflops(self, flop: float | None) -> float:
        """:meth:`flops` in units of 10^9 (GFLOPS)."""
        return self.flops(flop) / 1e9

    @property
    def error(self) -> BaseException | None:
        """The exception of a failed measurement made in this process (None otherwise)."""
        if self.ok:
            return None
        return next((c for c in self.costs if isinstance(c, BaseException)), None)

    @property
    def error_message(self) -> str:
        """What went wrong: the message or traceback of a failure, the error's name for a failure
        read from a log (logs keep only its number), "" for a success."""
        if self.ok:
            return ""
        text = next((c for c in self.costs if isinstance(c, str)), None)
        if text is not None:
            return text
        if self.error is not None:
            return str(self.error)
        try:
            return MeasureErrorNo(self.error_no).name
        except ValueError:
            return f"error {self.error_no}"

    def __repr__(self) -> str:
        err = self.error_no
        err_text = f"MeasureErrorNo.{err.name}" if isinstance(err, MeasureErrorNo) else str(err)
        return (f"MeasureResult(costs={self.costs!r}, error_no={err_text}, all_cost={self.all_cost}, "
                f"timestamp={self.timestamp!r})")
