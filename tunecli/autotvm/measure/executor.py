"""tunecli.autotvm.measure.executor: TVM's executor names (its module path).

A runner submits each measurement to an executor and reads the future it returns; tunecli's
runners take any :class:`concurrent.futures.Executor` (``LocalRunner.executor``), so TVM's base
names are the standard library's, and ``InlineExecutor`` is the local runner's default.
"""

from concurrent.futures import Executor, Future

from tunecli.engine.measure.executor import InlineExecutor

#: Raised by ``Future.result(timeout)`` when the call has not finished in time.
TimeoutError = TimeoutError  # noqa: A001 - TVM's name in this module

__all__ = ["Executor", "Future", "InlineExecutor", "TimeoutError"]
