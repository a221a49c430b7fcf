"""The RPC tracker: a registry of device servers that hands them out to clients by key.

Wire protocol (TVM v0.14's, see :mod:`tunecli.engine.rpc.protocol` for the framing and the
token extension). After the magic exchange each request is a JSON array:

==============================================  =============================================
request                                         reply
==============================================  =============================================
``[1]`` PING                                    ``0``
``[2, stop_key]`` STOP                          ``0`` and shut down if the key matches, ``-1``
``[3, key, [port, matchkey], addr_or_null]``    ``0``; the server's slot becomes free
``[4, key, user, priority]`` REQUEST            deferred until matched: ``[0, [host, port,
                                                matchkey]]``
``[5, {"key": "server:K", "addr": [h, p]}]``    ``0``; ``h = null`` means the peer address
``[6]`` SUMMARY                                 ``[0, {"queue_info": {...}, "server_info":
                                                [...]}]``
``[7]`` GET_PENDING_MATCHKEYS                   this connection's match keys not handed out
``[100, token]`` (tunecli)                      ``0``, or ``-1`` and close on a wrong token
==============================================  =============================================

An unknown code, a malformed or oversized message closes that connection only. When a server
connection that sent UPDATE_INFO closes, its free slots leave the pool; waiting requests of
a closed client are dropped (TVM keeps them until a resource is offered to them).

Keys and match keys are at most :data:`MAX_KEY` characters, an UPDATE_INFO at most
:data:`MAX_INFO` bytes of JSON, ports in [1, 65535]; a connection has at most
:data:`MAX_PER_CONNECTION` requests waiting and as many free slots put; the tracker keeps the
queues of at most :data:`MAX_QUEUES` keys (empty queues are forgotten first). A request past
these limits closes its connection, so that junk cannot make SUMMARY replies too large to read.

Connections are bounded by a :class:`tunecli.engine.rpc.connections.ConnectionLimits` record
(``limits.timeout`` below): the magic and every message must arrive whole within the timeout
once begun; a connection that holds nothing here (it has not sent UPDATE_INFO, PUT or REQUEST)
is closed after the timeout without a request, so one that sent only the magic goes quickly;
each peer address holds at most ``limits.per_peer`` connections, the tracker ``limits.total``.
"""

from __future__ import annotations

import asyncio
import json
import logging
import socket
import threading
from collections.abc import Callable

from tunecli.engine.rpc.connections import (
    DEFAULT_HOST,
    TRACKER_LIMITS,
    ConnectionLimits,
    PeerLimiter,
    exposure_warnings,
    keep_alive,
)
from tunecli.engine.rpc.protocol import (
    MAX_TRACKER_MESSAGE,
    RPC_TRACKER_MAGIC,
    TOKEN_CODE,
    TrackerCode,
    bind_first_free,
    encode_json,
    pack_int,
    random_key,
    resolve_token,
    token_matches,
    unpack_int,
)
from tunecli.engine.rpc.scheduler import PriorityScheduler, Resource
from tunecli.errors import RPCError

logger = logging.getLogger("tunecli.rpc.tracker")

#: Longest device key or match key, in characters.
MAX_KEY = 128
#: Largest UPDATE_INFO record, in bytes of JSON (it is repeated in every SUMMARY).
MAX_INFO = 256
#: Requests one connection may have waiting, and free slots it may have put.
MAX_PER_CONNECTION = 16
#: Device keys with a queue at once.
MAX_QUEUES = 256


class _Conn:
    """State of one tracker connection."""

    def __init__(self, writer: asyncio.StreamWriter) -> None:
        peer = writer.get_extra_info("peername") or ("", 0)
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


class TrackerServer:
    """The tracker's state and asyncio protocol handlers (one event loop, no locks).

    Parameters
    ----------
    sock : socket.socket
        A bound listening socket.
    token : str or None
        Shared token required from every connection (None: no authentication).
    limits : ConnectionLimits
        Timeout and connection caps (see the module docstring).
    """

    def __init__(self, sock: socket.socket, token: str | None = None,
                 limits: ConnectionLimits = TRACKER_LIMITS) -> None:
        self.sock = sock
        self.token = token
        self.limits = limits
        self._peers = PeerLimiter(limits)
        self.stop_key = random_key("tracker")
        self._schedulers: dict[str, PriorityScheduler] = {}
        self._conns: dict[_Conn, None] = {}  # insertion-ordered set
        self._stopped: asyncio.Event | None = None
        self._tasks: set[asyncio.Task] = set()
        self._handlers: dict[int, Callable[[_Conn, list], bool]] = {
            TrackerCode.PING: self._on_ping,
            TrackerCode.STOP: self._on_stop,
            TrackerCode.PUT: self._on_put,
            TrackerCode.REQUEST: self._on_request,
            TrackerCode.UPDATE_INFO: self._on_update_info,
            TrackerCode.SUMMARY: self._on_summary,
            TrackerCode.GET_PENDING_MATCHKEYS: self._on_pending,
        }

    async def serve(self, started: Callable[[], None] | None = None) -> None:
        """Serve until :meth:`request_stop` (or a STOP with the stop key)."""
        self._stopped = asyncio.Event()
        server = await asyncio.start_server(self._handle, sock=self.sock)
        if started is not None:
            started()
        try:
            await self._stopped.wait()
        finally:
            server.close()
            for conn in list(self._conns):
                conn.writer.close()
            if self._tasks:  # closed transports end the handlers; cancel only stragglers
                _, pending = await asyncio.wait(list(self._tasks), timeout=2.0)
                for task in pending:
                    task.cancel()

    def request_stop(self) -> None:
        """Ask :meth:`serve` to return (call inside the event loop)."""
        if self._stopped is not None:
            self._stopped.set()

    def summary(self) -> dict:
        """Return the SUMMARY payload: queue state per key and the registered servers."""
        servers = [c.info for c in self._conns if str(c.info.get("key", "")).startswith("server")]
        queues = {key: sched.summary() for key, sched in self._schedulers.items()}
        return {"queue_info": queues, "server_info": servers}

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

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        conn = _Conn(writer)
        if not self._peers.admit(conn.host):
            logger.warning("tracker: too many connections from %s (limit %d per peer, %d in all), closing",
                           conn.host, self.limits.per_peer, self.limits.total)
            writer.close()
            return
        self._conns[conn] = None
        sock = writer.get_extra_info("socket")
        if sock is not None:
            keep_alive(sock)
        task = asyncio.current_task()
        if task is not None:
            self._tasks.add(task)
        try:
            magic = unpack_int(await asyncio.wait_for(reader.readexactly(4), self.limits.timeout))
            if magic != RPC_TRACKER_MAGIC:
                logger.warning("tracker: invalid magic from %s, closing", conn.host)
                return
            writer.write(pack_int(RPC_TRACKER_MAGIC))
            authenticated = self.token is None
            while True:
                msg = await self._read_message(reader, conn)
                if msg is None:
                    return
                if msg[0] == TOKEN_CODE:
                    authenticated = len(msg) == 2 and token_matches(self.token, msg[1])
                    conn.send(TrackerCode.SUCCESS if authenticated else TrackerCode.FAIL)
                    if not authenticated:
                        logger.warning("tracker: wrong token from %s, closing", conn.host)
                        return
                elif not authenticated:
                    logger.warning("tracker: unauthenticated request from %s, closing", conn.host)
                    conn.send(TrackerCode.FAIL)
                    return
                else:
                    handler = self._handlers.get(msg[0])
                    if handler is None:
                        logger.warning("tracker: unknown tracker code %r from %s", msg[0], conn.host)
                        return
                    if not handler(conn, msg):
                        logger.warning("tracker: malformed request %.200r from %s", msg, conn.host)
                        return
                await asyncio.wait_for(writer.drain(), self.limits.timeout)  # a peer that never reads
        except TimeoutError:
            logger.info("tracker: %s kept the tracker waiting for %g s, closing",
                        conn.host, self.limits.timeout)
            writer.transport.abort()  # close() would wait for a peer that does not read
        except (asyncio.IncompleteReadError, ConnectionError, OSError):
            pass
        finally:
            self._close(conn)
            self._peers.release(conn.host)
            writer.close()
            self._tasks.discard(task)

    async def _read_message(self, reader: asyncio.StreamReader, conn: _Conn) -> list | None:
        """Read one request; None (after logging) on an oversized or malformed message.

        Raises
        ------
        TimeoutError
            When a connection holding nothing stays silent, or a message does not arrive whole,
            within ``limits.timeout``.
        """
        silence = None if conn.holds_state else self.limits.timeout
        first = await asyncio.wait_for(reader.readexactly(1), silence)
        return await asyncio.wait_for(self._read_rest(reader, conn, first), self.limits.timeout)

    async def _read_rest(self, reader: asyncio.StreamReader, conn: _Conn, first: bytes) -> list | None:
        length = unpack_int(first + await reader.readexactly(3))
        if length < 1 or length > MAX_TRACKER_MESSAGE:
            logger.warning("tracker: message length %d from %s outside [1, %d], closing",
                           length, conn.host, MAX_TRACKER_MESSAGE)
            return None
        data = await reader.readexactly(length)
        try:
            msg = json.loads(data.decode("utf-8"))
        except (UnicodeDecodeError, ValueError, RecursionError):
            logger.warning("tracker: malformed JSON from %s, closing", conn.host)
            return None
        if not isinstance(msg, list) or not msg or type(msg[0]) is not int:
            logger.warning("tracker: request from %s is not [code, ...], closing", conn.host)
            return None
        return msg

    def _close(self, conn: _Conn) -> None:
        conn.closed = True
        self._conns.pop(conn, None)
        for sched in self._schedulers.values():
            sched.drop_requests(conn)
        if "key" in conn.info:
            for value in conn.put_values:
                sched = self._schedulers.get(value.key)
                if sched is not None:
                    sched.remove(value)
        conn.put_values.clear()

    def _on_ping(self, conn: _Conn, msg: list) -> bool:
        conn.send(TrackerCode.SUCCESS)
        return True

    def _on_stop(self, conn: _Conn, msg: list) -> bool:
        if len(msg) == 2 and msg[1] == self.stop_key:
            conn.send(TrackerCode.SUCCESS)
            asyncio.get_running_loop().call_soon(self.request_stop)
        else:
            conn.send(TrackerCode.FAIL)
        return True

    def _on_put(self, conn: _Conn, msg: list) -> bool:
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

    def _on_request(self, conn: _Conn, msg: list) -> bool:
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
            if isinstance(owner, _Conn):
                owner.pending_matchkeys.discard(value.matchkey)
                if value in owner.put_values:
                    owner.put_values.remove(value)
            return True

        sched.request(conn, msg[3], assign)
        return True

    def _on_update_info(self, conn: _Conn, msg: list) -> bool:
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

    def _on_summary(self, conn: _Conn, msg: list) -> bool:
        conn.send([TrackerCode.SUCCESS, self.summary()])
        return True

    def _on_pending(self, conn: _Conn, msg: list) -> bool:
        conn.send(sorted(conn.pending_matchkeys))
        return True


def _is_key(value: object) -> bool:
    """A key, match key or address: a string of at most :data:`MAX_KEY` characters."""
    return isinstance(value, str) and len(value) <= MAX_KEY


def _is_port(value: object) -> bool:
    return type(value) is int and 0 < value < 65536


class Tracker:
    """A tracker serving in a background thread of this process.

    Parameters
    ----------
    host : str
        Address to bind (``"127.0.0.1"`` by default; ``"0.0.0.0"`` to accept remote devices).
    port, port_end : int
        The first free port in ``[port, port_end)`` is used.
    token : str or None
        Shared token; None reads ``TUNECLI_RPC_TOKEN``, ``""`` disables authentication.
    limits : ConnectionLimits
        Timeout and connection caps (see :mod:`tunecli.engine.rpc.tracker`).

    Attributes
    ----------
    host, port : str, int
        Where the tracker listens.
    stop_key : str
        Key that makes a STOP request shut the tracker down.
    """

    def __init__(self, host: str = DEFAULT_HOST, port: int = 9190, port_end: int = 9199,
                 token: str | None = None, limits: ConnectionLimits = TRACKER_LIMITS) -> None:
        sock = bind_first_free(host, port, port_end)
        self.host = host
        self.port = sock.getsockname()[1]
        self._server = TrackerServer(sock, resolve_token(token), limits)
        self.stop_key = self._server.stop_key
        self._loop = asyncio.new_event_loop()
        started = threading.Event()
        self._thread = threading.Thread(
            target=self._run, args=(started,), name=f"tunecli-tracker-{self.port}", daemon=True)
        self._thread.start()
        if not started.wait(10.0):
            raise RPCError(f"tracker {host}:{self.port}: event loop did not start")

    def _run(self, started: threading.Event) -> None:
        try:
            self._loop.run_until_complete(self._server.serve(started.set))
        finally:
            self._loop.close()
            self._server.sock.close()

    def summary(self) -> dict:
        """Return the current SUMMARY payload (thread-safe)."""
        future = asyncio.run_coroutine_threadsafe(self._summary(), self._loop)
        return future.result(timeout=10.0)

    async def _summary(self) -> dict:
        return json.loads(json.dumps(self._server.summary()))

    def stop(self) -> None:
        """Stop serving, close every connection and join the thread (idempotent)."""
        if self._thread.is_alive():
            try:
                self._loop.call_soon_threadsafe(self._server.request_stop)
            except RuntimeError:
                pass
            self._thread.join(10.0)

    terminate = stop

    def __enter__(self) -> Tracker:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def run_tracker(host: str = DEFAULT_HOST, port: int = 9190, port_end: int = 9199,
                token: str | None = None, on_ready: Callable[[str, int], None] | None = None,
                limits: ConnectionLimits = TRACKER_LIMITS) -> None:
    """Run a tracker in the foreground until interrupted or stopped with its stop key.

    Parameters
    ----------
    host : str
        Address to bind: loopback by default (TVM's tracker binds ``"0.0.0.0"``); pass
        ``"0.0.0.0"`` to accept remote devices, together with a token.
    port, port_end : int
        The first free port in ``[port, port_end)`` is used.
    token : str or None
        Shared token; None reads ``TUNECLI_RPC_TOKEN``, ``""`` disables authentication.
    on_ready : callable, optional
        Called as ``on_ready(host, port)`` once the tracker accepts connections.
    limits : ConnectionLimits
        Timeout and connection caps.

    Raises
    ------
    RPCError
        When no port in the range is free.
    """
    sock = bind_first_free(host, port, port_end)
    bound = sock.getsockname()[1]
    server = TrackerServer(sock, resolve_token(token), limits)
    for warning in exposure_warnings("tracker", host, server.token):
        logger.warning(warning)

    def started() -> None:
        logger.info("tracker listening on %s:%d", host, bound)
        if on_ready is not None:
            on_ready(host, bound)

    try:
        asyncio.run(server.serve(started))
    except KeyboardInterrupt:
        pass
    finally:
        sock.close()
