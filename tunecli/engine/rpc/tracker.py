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

What each request does, and the limits on keys, records and waiting work, are in
:mod:`tunecli.engine.rpc.tracker_state`; this module is the network side.

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
    pack_int,
    resolve_token,
    token_matches,
    unpack_int,
)
from tunecli.engine.rpc.sockets import bind_first_free
from tunecli.engine.rpc.tracker_state import TrackerConnection, TrackerState
from tunecli.errors import RPCError

logger = logging.getLogger("tunecli.rpc.tracker")


class TrackerServer:
    """The network side of a tracker: connections, framing, timeouts, caps and the token, on one
    asyncio event loop (no locks); requests are applied by its :class:`TrackerState`.

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
        self.state = TrackerState(on_stop=self.request_stop)
        self.stop_key = self.state.stop_key
        self.peers = PeerLimiter(limits)
        self._stopped: asyncio.Event | None = None
        self._tasks: set[asyncio.Task] = set()

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
            for conn in list(self.state.connections):
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
        """Return the SUMMARY payload (call inside the event loop)."""
        return self.state.summary()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        conn = TrackerConnection(writer, writer.get_extra_info("peername") or ("", 0))
        if not self.peers.admit(conn.host):
            logger.warning("tracker: too many connections from %s (limit %d per peer, %d in all), closing",
                           conn.host, self.limits.per_peer, self.limits.total)
            writer.close()
            return
        self.state.open(conn)
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
                elif not self.state.handle(conn, msg):
                    return
                await asyncio.wait_for(writer.drain(), self.limits.timeout)  # a peer that never reads
        except TimeoutError:
            logger.info("tracker: %s kept the tracker waiting for %g s, closing",
                        conn.host, self.limits.timeout)
            writer.transport.abort()  # close() would wait for a peer that does not read
        except (asyncio.IncompleteReadError, ConnectionError, OSError):
            pass
        finally:
            self.state.close(conn)
            self.peers.release(conn.host)
            writer.close()
            self._tasks.discard(task)

    async def _read_message(self, reader: asyncio.StreamReader, conn: TrackerConnection) -> list | None:
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

    async def _read_rest(self, reader: asyncio.StreamReader, conn: TrackerConnection,
                         first: bytes) -> list | None:
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

    def connection_count(self) -> int:
        """Connections the tracker holds now (thread-safe)."""
        return self._server.peers.total()

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
