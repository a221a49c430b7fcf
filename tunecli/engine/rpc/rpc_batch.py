"""The shared state of one :meth:`RPCRunner.run <tunecli.engine.rpc.rpc_runner.RPCRunner.run>` call:
the queue of configs the device threads pull from, their results, attempts and devices, the
connections to break when the batch stops, its deadline and since when its tracker is lost."""

from __future__ import annotations

import collections
import logging
import threading
import time

from tunecli.engine.measure.result import MeasureErrorNo, MeasureResult
from tunecli.engine.measure.runner import OnResult
from tunecli.engine.rpc.client import TrackerSession
from tunecli.engine.rpc.remote import RemoteSession
from tunecli.errors import RPCError

logger = logging.getLogger("tunecli.rpc.runner")


def error_result(error_no: MeasureErrorNo, message: str, all_cost: float) -> MeasureResult:
    """A failed MeasureResult whose error is ``RPCError(message)``."""
    return MeasureResult.failure(error_no, message, all_cost, RPCError(message))


class Batch:
    """Shared state of one ``run`` call: the queue, the results and the live connections."""

    def __init__(self, todo: list[int], n_inputs: int) -> None:
        self.lock = threading.Lock()
        self.queue = collections.deque(todo)
        self.results: list[MeasureResult | None] = [None] * n_inputs
        self.ready: collections.deque[int] = collections.deque()  # finished, not yet reported
        self.reported: set[int] = set()
        self.devices: list[str | None] = [None] * n_inputs
        self.attempts = [0] * n_inputs
        self.stop = threading.Event()
        self.busy = 0
        self.failure: BaseException | None = None
        self.connections: set[TrackerSession | RemoteSession] = set()
        self.deadline = 0.0  #: when waiting for devices turns unmeasured configs into RUN_TIMEOUT
        self.tracker_lost_since: float | None = None  #: since when the tracker is lost (None: it is not)

    def tracker_lost(self, tracker: str, key: str, grace: float) -> None:
        """Note that the tracker does not answer (or broke a connection); warn the first time."""
        with self.lock:
            first = self.tracker_lost_since is None
            if first:
                self.tracker_lost_since = time.monotonic()
        if first:
            logger.warning("RPCRunner: the tracker %s does not answer (stopped or restarted?); waiting up to "
                           "%g s for it and a server of key %r to come back", tracker, grace, key)

    def tracker_back(self, tracker: str, key: str) -> None:
        """Note that the tracker and a device answer again: the deadline moves by the time lost."""
        with self.lock:
            if self.tracker_lost_since is None:
                return
            lost = time.monotonic() - self.tracker_lost_since
            self.tracker_lost_since = None
            self.deadline += lost
        logger.warning("RPCRunner: the tracker %s and a device of key %r are back after %.0f s; measuring "
                       "goes on", tracker, key, lost)

    def abort_all(self) -> None:
        """Stop the threads and break every connection they may be blocked on."""
        self.stop.set()
        with self.lock:
            conns = list(self.connections)
        for conn in conns:
            conn.abort()


def report_ready(batch: Batch, on_result: OnResult | None) -> None:
    """Hand every result finished since the last call to ``on_result`` (in the caller's thread)."""
    while True:
        with batch.lock:
            if not batch.ready:
                return
            index = batch.ready.popleft()
            result = batch.results[index]
            if index in batch.reported or result is None:
                continue
            batch.reported.add(index)
        if on_result is not None:
            on_result(index, result)
