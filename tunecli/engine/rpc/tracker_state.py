"""What a tracker knows and how each request changes it (TVM's tracker semantics, no I/O).

A :class:`TrackerConnection` is one peer's state: its UPDATE_INFO record, the free slots it
PUT, its requests waiting. :class:`TrackerState` holds the connections and one
:class:`tunecli.engine.rpc.scheduler.PriorityScheduler` per device key, and
:meth:`TrackerState.handle` applies one request, queuing the replies on the connections
(the network side is :mod:`tunecli.engine.rpc.tracker`).

Limits, so that junk cannot make SUMMARY replies too large for clients to read: keys and match
keys of at most :data:`MAX_KEY` characters, UPDATE_INFO records of at most :data:`MAX_INFO`
bytes of JSON, ports in [1, 65535], at most :data:`MAX_PER_CONNECTION` requests waiting and as
many free slots per connection, queues for at most :data:`MAX_QUEUES` keys (empty queues are
forgotten first). A request past them is malformed: its connection is closed.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from typing import Protocol

from tunecli.engine.rpc.protocol import TrackerCode, encode_json, random_key
from tunecli.engine.rpc.scheduler import PriorityScheduler, Resource

logger = logging.getLogger("tunecli.rpc.tracker")

#: Longest device key or match key, in characters.
MAX_KEY = 128
#: Largest UPDATE_INFO record, in bytes of JSON (it is repeated in every SUMMARY).
MAX_INFO = 256
#: Requests one connection may have waiting, and free slots it may have put.
MAX_PER_CONNECTION = 16
#: Device keys with a queue at once.
MAX_QUEUES = 256


class Writer(Protocol):
    """Where a connection's replies go (an ``asyncio.StreamWriter``)."""

    def write(self, data: bytes) -> None: ...

    def is_closing(self) -> bool: ...


class TrackerConnection:
    """State of one tracker connection.

    Parameters
    ----------
    writer : Writer
        Where replies are queued.
    peer : tuple of (str, int)
        The peer's address.
    """

    def __init__(self, writer: Writer, peer: tuple[str, int]) -> None:
        self.writer = writer
        self.host = str(peer[0])
        self.info: dict = {"addr": [self.host, peer[1]]}
        self.pending_matchkeys: set[str] = set()
        self.put_values: list[Resource] = []
        self.waiting = 0  # requests not matched yet
        self.closed = False
        self.holds_state = False  # sent UPDATE_INFO, PUT or REQUEST: may stay silent for long

    def send(self, obj: object) -> bool:
        """Queue one framed JSON message; False when the connection is gone."""
        if self.closed or self.writer.is_closing():
            return False
        self.writer.write(encode_json(obj))
        return True


class TrackerState:
    """Registered servers, free slots and waiting requests, per device key.

    Parameters
    ----------
    on_stop : callable
        Called (without arguments) when a STOP request presents :attr:`stop_key`.

    Attributes
    ----------
    stop_key : str
        Key that makes a STOP request shut the tracker down.
    connections : dict
        The open connections (an insertion-ordered set).
    """

    def __init__(self, on_stop: Callable[[], None]) -> None:
        self.stop_key = random_key("tracker")
        self.connections: dict[TrackerConnection, None] = {}
        self._on_stop_request = on_stop
        self._schedulers: dict[str, PriorityScheduler] = {}
        self._handlers: dict[int, Callable[[TrackerConnection, list], bool]] = {
            TrackerCode.PING: self._on_ping,
            TrackerCode.STOP: self._on_stop,
            TrackerCode.PUT: self._on_put,
            TrackerCode.REQUEST: self._on_request,
            TrackerCode.UPDATE_INFO: self._on_update_info,
            TrackerCode.SUMMARY: self._on_summary,
            TrackerCode.GET_PENDING_MATCHKEYS: self._on_pending,
        }

    def summary(self) -> dict:
        """Return the SUMMARY payload: queue state per key and the registered servers."""
        servers = [c.info for c in self.connections if str(c.info.get("key", "")).startswith("server")]
        queues = {key: sched.summary() for key, sched in self._schedulers.items()}
        return {"queue_info": queues, "server_info": servers}

    def open(self, conn: TrackerConnection) -> None:
        """Add a new connection."""
        self.connections[conn] = None

    def handle(self, conn: TrackerConnection, msg: list) -> bool:
        """Apply one request ``[code, ...]`` from ``conn``; False (after logging) when it is
        unknown or malformed, and the connection must be closed."""
        handler = self._handlers.get(msg[0])
        if handler is None:
            logger.warning("tracker: unknown tracker code %r from %s", msg[0], conn.host)
            return False
        if not handler(conn, msg):
            logger.warning("tracker: malformed request %.200r from %s", msg, conn.host)
            return False
        return True

    def close(self, conn: TrackerConnection) -> None:
        """Forget a closed connection: its waiting requests, and its free slots if it sent
        UPDATE_INFO (TVM keeps the slots of a server that did not)."""
        conn.closed = True
        self.connections.pop(conn, None)
        for sched in self._schedulers.values():
            sched.drop_requests(conn)
        if "key" in conn.info:
            for value in conn.put_values:
                sched = self._schedulers.get(value.key)
                if sched is not None:
                    sched.remove(value)
        conn.put_values.clear()

    def _scheduler(self, key: str) -> PriorityScheduler | None:
        """The queue of ``key``, made if needed; None when :data:`MAX_QUEUES` keys have waiting work."""
        if key not in self._schedulers:
            if len(self._schedulers) >= MAX_QUEUES:
                for name in [name for name, sched in self._schedulers.items() if sched.is_empty()]:
                    del self._schedulers[name]
            if len(self._schedulers) >= MAX_QUEUES:
                logger.warning("tracker: %d keys have queues already, refusing key %.50r", MAX_QUEUES, key)
                return None
            self._schedulers[key] = PriorityScheduler(key)
        return self._schedulers[key]

    def _on_ping(self, conn: TrackerConnection, msg: list) -> bool:
        conn.send(TrackerCode.SUCCESS)
        return True

    def _on_stop(self, conn: TrackerConnection, msg: list) -> bool:
        if len(msg) == 2 and msg[1] == self.stop_key:
            conn.send(TrackerCode.SUCCESS)
            self._on_stop_request()
        else:
            conn.send(TrackerCode.FAIL)
        return True

    def _on_put(self, conn: TrackerConnection, msg: list) -> bool:
        if len(msg) not in (3, 4) or not _is_key(msg[1]):
            return False
        slot, addr = msg[2], (msg[3] if len(msg) == 4 else None)
        if not (isinstance(slot, list) and len(slot) == 2 and _is_port(slot[0]) and _is_key(slot[1])
                and (addr is None or _is_key(addr))) or len(conn.put_values) >= MAX_PER_CONNECTION:
            return False
        sched = self._scheduler(msg[1])
        if sched is None:
            return False
        conn.holds_state = True
        value = Resource(conn, msg[1], addr or conn.host, slot[0], slot[1])
        conn.pending_matchkeys.add(value.matchkey)
        conn.put_values.append(value)
        sched.put(value)
        conn.send(TrackerCode.SUCCESS)
        return True

    def _on_request(self, conn: TrackerConnection, msg: list) -> bool:
        if len(msg) != 4 or not _is_key(msg[1]) or type(msg[3]) is not int \
                or conn.waiting >= MAX_PER_CONNECTION:
            return False
        sched = self._scheduler(msg[1])
        if sched is None:
            return False
        conn.holds_state = True
        conn.waiting += 1

        def assign(value: Resource) -> bool:
            if not conn.send([TrackerCode.SUCCESS, [value.host, value.port, value.matchkey]]):
                return False
            conn.waiting -= 1
            owner = value.owner
            if isinstance(owner, TrackerConnection):
                owner.pending_matchkeys.discard(value.matchkey)
                if value in owner.put_values:
                    owner.put_values.remove(value)
            return True

        sched.request(conn, msg[3], assign)
        return True

    def _on_update_info(self, conn: TrackerConnection, msg: list) -> bool:
        info = msg[1] if len(msg) == 2 else None
        if not isinstance(info, dict) or not _is_key(info.get("key", "")) \
                or len(json.dumps(info)) > MAX_INFO:
            return False
        addr = info.get("addr")
        if addr is not None:
            if not (isinstance(addr, list) and len(addr) == 2 and (addr[0] is None or _is_key(addr[0]))
                    and _is_port(addr[1])):
                return False
            if addr[0] is None:
                addr[0] = conn.host
        conn.holds_state = True
        conn.info.update(info)
        conn.send(TrackerCode.SUCCESS)
        return True

    def _on_summary(self, conn: TrackerConnection, msg: list) -> bool:
        conn.send([TrackerCode.SUCCESS, self.summary()])
        return True

    def _on_pending(self, conn: TrackerConnection, msg: list) -> bool:
        conn.send(sorted(conn.pending_matchkeys))
        return True


def _is_key(value: object) -> bool:
    """A key, match key or address: a string of at most :data:`MAX_KEY` characters."""
    return isinstance(value, str) and len(value) <= MAX_KEY


def _is_port(value: object) -> bool:
    return type(value) is int and 0 < value < 65536
