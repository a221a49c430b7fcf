"""``InlineExecutor``: the executor a :class:`~tunecli.engine.measure.local_runner.LocalRunner`
hands each measurement to by default (TVM's runners submit each one to an ``executor``).

A measurement's isolation comes from the runner's worker process, so the runner's own side of a
measurement (make the request, wait for the worker's reply) runs in the caller's thread: an
interrupt reaches it at once and nothing is left running behind it. Any
:class:`concurrent.futures.Executor` can take its place (``runner.executor = ...``).
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Executor, Future
from typing import ParamSpec, TypeVar

P = ParamSpec("P")
T = TypeVar("T")


class InlineExecutor(Executor):
    """Run each submitted call at once in the caller's thread; its future is done on return."""

    def submit(self, fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> Future[T]:
        """Call ``fn(*args, **kwargs)`` now; its result (or the exception it raised) is in the future."""
        future: Future[T] = Future()
        future.set_running_or_notify_cancel()
        try:
            future.set_result(fn(*args, **kwargs))
        except Exception as err:  # noqa: BLE001 - the future carries it to whoever asks for the result
            future.set_exception(err)
        return future
