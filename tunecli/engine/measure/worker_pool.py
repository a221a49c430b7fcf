"""A fixed set of :class:`~tunecli.engine.measure.worker.Worker` children sharing a stream of calls,
each outcome yielded as soon as it is in."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from multiprocessing.connection import wait

from tunecli.engine.measure.worker import CallOutcome, Worker


class WorkerPool:
    """A fixed set of :class:`Worker` children sharing a stream of calls.

    Parameters
    ----------
    size : int
        Number of children.
    max_jobs, preload, name :
        Passed to each :class:`Worker`.
    """

    def __init__(self, size: int, max_jobs: int | None = None, preload: Sequence[str] = (),
                 name: str = "tunecli-worker") -> None:
        if size < 1:
            raise ValueError(f"WorkerPool: size must be >= 1, got {size}")
        self.workers = [Worker(max_jobs, preload, f"{name}-{i}") for i in range(size)]

    def start(self) -> None:
        """Start every child (they warm up in parallel)."""
        for w in self.workers:
            w.start()

    def close(self) -> None:
        """Stop every child."""
        for w in self.workers:
            w.close()

    def map_unordered(self, func_ref: str, payloads: Sequence[object],
                      timeout: float) -> Iterator[tuple[int, CallOutcome]]:
        """Run ``func_ref`` on each payload across the children; yield ``(index, outcome)`` as done.

        Children are refilled before each yield, so they keep working while the consumer
        handles a result. A call's timeout is measured by its child, so a result that arrived
        while the consumer was busy is never reported as overdue.
        """
        pending = list(range(len(payloads)))[::-1]
        running: dict[int, int] = {}  # worker position -> payload index

        def refill() -> None:
            for pos, w in enumerate(self.workers):
                if pos not in running and pending:
                    index = pending.pop()
                    w.submit(func_ref, payloads[index], timeout)
                    running[pos] = index

        self.start()
        try:
            while pending or running:
                refill()
                done: list[tuple[int, CallOutcome]] = []
                for pos in list(running):
                    outcome = self.workers[pos].poll(0.0)
                    if outcome is not None:
                        done.append((running.pop(pos), outcome))
                if not done:
                    conns = [c for c in (self.workers[p].connection for p in running) if c is not None]
                    left = min(self.workers[p].seconds_left() for p in running)
                    wait(conns, timeout=max(left, 0.0) + 0.01)
                    continue
                for item in done:
                    refill()  # keep the children busy while the consumer handles a result
                    yield item
        finally:
            for pos in running:  # the consumer stopped early: abandon the calls still running
                self.workers[pos].close()
