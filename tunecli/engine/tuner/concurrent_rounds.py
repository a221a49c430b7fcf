"""Rounds of several tasks measured at once, on the lanes of a measure backend that has them.

A runner that can measure several batches at the same time, each on workers of its own, offers
*lanes*: ``concurrent_lanes(task)`` (the keys of the lanes that can take a batch of ``task``'s
target now) and ``lane_option(lanes)`` (a ``measure_option`` confined to a group of lanes).  A Ray
cluster's lanes are its nodes of the target's CPU (``cluster.ray_runner``).

:func:`tune_concurrently` keeps the lanes busy with rounds of different tasks.  Each round is
chosen as the scheduler chooses one (``TaskScheduler.next_task``: the warm-up first, then its
policy, among the tasks without a round in flight, the trials of the rounds in flight reserved
from the budget), started (``begin_round``) and counted when it ends (``end_round``) by the
calling thread, and measured in a thread of its own (``measure_round``: only its task's tuner is
touched there).  The free lanes are shared out among the rounds started together, so that fewer
tasks than lanes still keep every lane busy (a round on two nodes proposes batches for both).
The tuner callbacks (the log writer, the progress) are called one at a time, under one lock, so
each record is written whole by this process, as when rounds run one by one.

When a round raises (its cluster lost), no round starts any more; the rounds in flight finish
(their records are logged) and the first error is raised.  When the calling thread is interrupted,
the rounds in flight call no callback any more (they end with the backend, closed by the caller).
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Hashable, Sequence
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from tunecli.engine.measure.batch import MeasureOption
    from tunecli.engine.measure.result import MeasureInput, MeasureResult
    from tunecli.engine.task.task import Task
    from tunecli.engine.tuner.task_scheduler import RoundCallback, TaskScheduler
    from tunecli.engine.tuner.tuner import MeasureSetting, Tuner


class Lanes(Protocol):
    """A measure backend's runner that measures batches side by side (see the module doc)."""

    def concurrent_lanes(self, task: Task) -> list[Hashable]:
        """The lanes that can take a batch of ``task``'s target now."""

    def lane_option(self, lanes: tuple[Hashable, ...]) -> MeasureOption:
        """A ``measure_option`` that measures on ``lanes`` only."""


def concurrent_lanes(measure_option: MeasureSetting) -> Lanes | None:
    """The runner of ``measure_option`` when it offers lanes, else None (rounds run one by one)."""
    runner = measure_option.get("runner") if isinstance(measure_option, dict) else None
    if runner is not None and callable(getattr(runner, "concurrent_lanes", None)):
        return runner
    return None


class _Gate:
    """The lock the rounds' callbacks are called under, and whether they are still called."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.open = True

    def close(self) -> None:
        """Call no callback any more (the tune was interrupted: its log may be closed)."""
        with self.lock:
            self.open = False


class _OneAtATime:
    """A tuner callback called under the gate's lock while it is open (a streaming one keeps streaming)."""

    def __init__(self, callback: Callable[..., None], gate: _Gate) -> None:
        self.callback, self.gate = callback, gate
        if callable(getattr(callback, "on_result", None)):
            self.on_result = self._on_result

    def _on_result(self, tuner: Tuner, inp: MeasureInput, res: MeasureResult) -> None:
        with self.gate.lock:
            if self.gate.open:
                self.callback.on_result(tuner, inp, res)  # type: ignore[attr-defined]

    def __call__(self, tuner: Tuner, inputs: list[MeasureInput], results: list[MeasureResult]) -> None:
        with self.gate.lock:
            if self.gate.open:
                self.callback(tuner, inputs, results)


def _measure(scheduler: TaskScheduler, index: int, option: MeasureSetting,
             callbacks: Sequence[Callable[..., None]], finished: queue.Queue) -> None:
    """The body of a round's thread: measure it, hand the outcome (or the error) back."""
    try:
        inputs, results = scheduler.measure_round(index, option, callbacks)
    except BaseException as err:  # noqa: BLE001 - handed to the driver's thread, raised there
        finished.put((index, [], [], err))
        return
    finished.put((index, inputs, results, None))


def tune_concurrently(scheduler: TaskScheduler, lanes: Lanes, measure_option: MeasureSetting,
                      callbacks: Sequence[Callable[..., None]] = (),
                      round_callbacks: Sequence[RoundCallback] = ()) -> None:
    """Run ``scheduler``'s rounds on the lanes, several at once, until its budget is spent or every
    task is done (see the module doc).

    Parameters
    ----------
    scheduler : TaskScheduler
    lanes : Lanes
        The runner of ``measure_option``.
    measure_option : dict
        The backend as a whole: used for a round when no lane is left (it says what is wrong).
    callbacks : sequence of callable
        Tuner callbacks, called one at a time.
    round_callbacks : sequence of callable
        Each called as ``cb(scheduler, index, inputs, results)`` in this thread after every round.
    """
    gate = _Gate()
    serialized = [_OneAtATime(callback, gate) for callback in callbacks]
    try:
        _run(scheduler, lanes, measure_option, serialized, round_callbacks, gate)
    except BaseException:
        gate.close()  # rounds still in flight (an interrupt) write nothing more
        raise


def _run(scheduler: TaskScheduler, lanes: Lanes, measure_option: MeasureSetting,
         serialized: list[_OneAtATime], round_callbacks: Sequence[RoundCallback], gate: _Gate) -> None:
    finished: queue.Queue = queue.Queue()
    running: dict[int, tuple[Hashable, ...]] = {}  # task index -> the lanes of its round
    failure: BaseException | None = None
    first = scheduler.tasks[0].task
    while True:
        if failure is None:
            busy = {lane for group in running.values() for lane in group}
            free = [lane for lane in lanes.concurrent_lanes(first) if lane not in busy]
            started: list[int] = []
            while len(started) < (len(free) or (0 if running else 1)):  # no lane at all: the whole backend
                index = scheduler.next_task()
                if index is None:
                    break
                scheduler.begin_round(index)
                started.append(index)
            for k, index in enumerate(started):
                group = tuple(free[k::len(started)])
                option = lanes.lane_option(group) if group else measure_option
                running[index] = group
                threading.Thread(target=_measure, args=(scheduler, index, option, serialized, finished),
                                 name=f"tune-round-{index}", daemon=True).start()
        if not running:
            break
        index, inputs, results, error = finished.get()
        del running[index]
        if error is not None:
            failure = failure or error
            continue
        with gate.lock:
            scheduler.end_round(index, inputs, results)
            for callback in round_callbacks:
                callback(scheduler, index, inputs, results)
    if failure is not None:
        raise failure
