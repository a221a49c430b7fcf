"""Per-device-key matching of free servers with waiting requests (TVM's ``PriorityScheduler``).

Free resources wait in a FIFO list; requests wait in a heap ordered by ``(-priority, arrival)``,
so the highest priority is served first and equal priorities in arrival order. After every
change, while both sides are non-empty, the oldest free resource is offered to the best
request. The request's callback returns False when its requester is gone; the resource then
goes back to the end of the free list and the next request is tried.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable
from dataclasses import dataclass, field


@dataclass(eq=False)
class Resource:
    """A free slot of a device server, as registered with PUT."""

    owner: object
    key: str
    host: str
    port: int
    matchkey: str


@dataclass(order=True)
class _Request:
    neg_priority: int
    counter: int
    owner: object = field(compare=False)
    callback: Callable[[Resource], bool] = field(compare=False)


class PriorityScheduler:
    """Match free resources of one device key with requests, highest priority first.

    Parameters
    ----------
    key : str
        The device key this scheduler serves (for messages only).
    """

    def __init__(self, key: str) -> None:
        self.key = key
        self._values: list[Resource] = []
        self._requests: list[_Request] = []
        self._counter = itertools.count()

    def put(self, value: Resource) -> None:
        """Add a free resource and run the matching."""
        self._values.append(value)
        self._schedule()

    def request(self, owner: object, priority: int, callback: Callable[[Resource], bool]) -> None:
        """Queue a request from ``owner``; ``callback(resource)`` is called once it is matched.

        Parameters
        ----------
        owner : object
            The requesting connection (used by :meth:`drop_requests`).
        priority : int
            Higher is served first.
        callback : callable
            Receives the matched :class:`Resource`; returns False when the requester is gone.
        """
        heapq.heappush(self._requests, _Request(-priority, next(self._counter), owner, callback))
        self._schedule()

    def remove(self, value: Resource) -> None:
        """Withdraw a free resource if it is still free."""
        if value in self._values:
            self._values.remove(value)
        self._schedule()

    def drop_requests(self, owner: object) -> None:
        """Forget every waiting request of ``owner`` (its connection closed)."""
        kept = [req for req in self._requests if req.owner is not owner]
        if len(kept) != len(self._requests):
            heapq.heapify(kept)
            self._requests = kept

    def is_empty(self) -> bool:
        """True when no resource is free and no request waits."""
        return not self._values and not self._requests

    def summary(self) -> dict[str, int]:
        """Return ``{"free": number of free resources, "pending": number of waiting requests}``."""
        return {"free": len(self._values), "pending": len(self._requests)}

    def _schedule(self) -> None:
        """Offer the oldest free resources to the best requests while both exist."""
        while self._values and self._requests:
            value = self._values.pop(0)
            request = heapq.heappop(self._requests)
            if not request.callback(value):
                self._values.append(value)
