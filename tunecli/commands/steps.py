"""Progress of a command's long steps (building a network, timing it, the graph tuner).

An engine action tells what each step starts doing (its ``on_step`` callback); ``StepView``
shows it on stderr: on a terminal a rich status line with the step and its seconds, otherwise
a plain line when a step starts and every ``every`` seconds while it runs, each line within
80 columns, and the seconds the command took at the end.
"""

from __future__ import annotations

import threading
import time
from types import TracebackType

from rich.status import Status

from tunecli.commands.app import App

#: Seconds between the plain lines of a step still running.
STEP_EVERY_S = 15.0
#: Columns of a plain line.
STEP_WIDTH = 80


class StepView:
    """A context manager whose instance is an ``on_step(text)`` callback (see the module doc).

    Parameters
    ----------
    app : App
    command : str
        Starts every line (``"apply"``).
    every : float
        Seconds between the plain lines of a running step.
    """

    def __init__(self, app: App, command: str, every: float = STEP_EVERY_S) -> None:
        self.app, self.command, self.every = app, command, every
        self.step: str | None = None
        self.running = False  #: a step runs: its "still" lines are due
        self.started = self.step_started = time.monotonic()
        self._status: Status | None = None
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._ticker: threading.Thread | None = None

    def __enter__(self) -> StepView:
        self.started = time.monotonic()
        if self.app.err.is_terminal:
            self._status = Status("", console=self.app.err)
        else:
            self._ticker = threading.Thread(target=self._tick, name="tunecli-steps", daemon=True)
            self._ticker.start()
        return self

    def __call__(self, step: str) -> None:
        with self._lock:
            self.step, self.step_started, self.running = step, time.monotonic(), True
            if self._status is not None:
                self._status.update(f"{self.command}: {step}")
                self._status.start()
            else:
                self._line(f"{self.command}: {step}")

    def end_step(self) -> None:
        """The running step is over (the tasks' own progress follows): no more "still" lines."""
        with self._lock:
            self.running = False

    def _tick(self) -> None:
        while not self._stop.wait(self.every):
            with self._lock:
                if self.running and time.monotonic() - self.step_started >= self.every:
                    seconds = time.monotonic() - self.step_started
                    self._line(f"{self.command}: still {self.step}", f" ({seconds:.0f} s)")

    def _line(self, text: str, suffix: str = "") -> None:
        """Print ``text`` and ``suffix`` in ``STEP_WIDTH`` columns (``text`` cut short if need be)."""
        room = STEP_WIDTH - len(suffix)
        if len(text) > room:
            text = text[:room - 1] + "…"
        self.app.err.print(text + suffix, markup=False, highlight=False, soft_wrap=True)

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        self._stop.set()
        if self._ticker is not None:
            self._ticker.join()
        if self._status is not None:
            self._status.stop()
        if self.step is not None and kind is None:
            self._line(f"{self.command}: done in {time.monotonic() - self.started:.1f} s")
