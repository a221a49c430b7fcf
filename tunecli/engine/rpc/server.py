"""A device server: registers with a tracker like TVM's and measures kernels for one client at a time.

The server registers with a tracker as TVM's does and waits for a client presenting its current
match key (:class:`tunecli.engine.rpc.server_registration.ServerRegistration`).

A client connects with TVM's handshake (``client:<matchkey>``, options ``-timeout=`` and, when
the server has a token, ``-token=``), then runs a measurement session
(:mod:`tunecli.engine.rpc.session`), in which it describes its processor when asked
(:class:`tunecli.engine.rpc.device_info.DeviceInfo`). Kernels run in a persistent
:class:`tunecli.engine.measure.worker.Worker` child process, replaced when it dies, so a
crashing kernel becomes a RUNTIME_DEVICE reply and a hanging one a RUN_TIMEOUT reply that says
it was killed for running past the request's timeout. The same session speaks TVM's remote
session API (:mod:`tunecli.engine.rpc.session_ops`: uploads into a private directory removed
when the session ends, libraries loaded and networks run in that worker), so a crashing library
ends its session, never the server. When the session ends the server PUTs a new match key and
is free again.

Handshakes are read concurrently by a :class:`tunecli.engine.rpc.connections.HandshakeGate`
(a deadline each, a cap per peer address), so idle connections delay no client; a wrong key or
token is refused right there. Clients presenting the match key wait their turn for the device.

A server runs native code that its clients send: it must be reachable by trusted clients only
(it binds loopback by default; across machines use a token and a firewall).
"""

from __future__ import annotations

import dataclasses
import logging
import select
import socket
import threading
import time
from collections.abc import Callable

from tunecli.engine.measure.result import MeasureErrorNo
from tunecli.engine.measure.timing import MEASURE_FUNC, measure_in_worker
from tunecli.engine.measure.worker import Worker
from tunecli.engine.rpc.connections import (
    DEFAULT_HOST,
    SERVER_LIMITS,
    ConnectionLimits,
    HandshakeGate,
    exposure_warnings,
    keep_alive,
    recv_before,
)
from tunecli.engine.rpc.device_info import DeviceInfo, this_device
from tunecli.engine.rpc.protocol import (
    MAX_HEADER,
    RPC_CODE_MISMATCH,
    RPC_CODE_SUCCESS,
    RPC_MAGIC,
    PeerClosed,
    pack_int,
    parse_key_options,
    recv_frame,
    resolve_token,
    send_frame,
    token_matches,
    unpack_int,
)
from tunecli.engine.rpc.server_registration import ServerRegistration
from tunecli.engine.rpc.session import (
    MeasureReply,
    MeasureRequest,
    decode_request,
    encode_device,
    encode_reply,
)
from tunecli.engine.rpc.session_files import DEFAULT_MAX_UPLOAD, SessionRefusal
from tunecli.engine.rpc.session_ops import REMOTE_OPS, SessionOps
from tunecli.engine.rpc.sockets import bind_first_free
from tunecli.errors import RPCError

logger = logging.getLogger("tunecli.rpc.server")


class Server:
    """A device server for one device key.

    Parameters
    ----------
    host : str
        Address to bind.
    port, port_end : int
        The first free port in ``[port, port_end)`` is used.
    key : str
        Device key (required with a tracker).
    tracker_addr : tuple of (str, int), optional
        The tracker to register with.
    custom_addr : str, optional
        Address announced to the tracker instead of the one it sees.
    token : str or None
        Shared token, for the tracker and required from clients (None reads
        ``TUNECLI_RPC_TOKEN``; ``""`` disables it).
    ping_period, unmatch_timeout, retry_period : float
        Tracker polling period, how long a handed-out match key may stay unused, and the
        pause between tracker reconnection attempts, in seconds.
    idle_timeout : float
        A session whose client stays silent this long is closed.
    limits : ConnectionLimits
        Handshake deadline and caps on connections per peer and in all (see
        :mod:`tunecli.engine.rpc.connections`).
    max_upload : int
        Bytes a session may upload in all.
    on_registered : callable, optional
        Called as ``on_registered(again)`` when the tracker has taken the server (see :func:`run_server`).

    Attributes
    ----------
    port : int
        The bound port.
    device : DeviceInfo
        The processor kernels run on, as the server describes it to clients.
    """

    def __init__(self, host: str = DEFAULT_HOST, port: int = 9091, port_end: int = 9199, key: str = "",
                 tracker_addr: tuple[str, int] | None = None, custom_addr: str | None = None,
                 token: str | None = None, ping_period: float = 2.0, unmatch_timeout: float = 4.0,
                 retry_period: float = 5.0, idle_timeout: float = 600.0,
                 limits: ConnectionLimits = SERVER_LIMITS, max_upload: int = DEFAULT_MAX_UPLOAD,
                 on_registered: Callable[[bool], None] | None = None) -> None:
        if tracker_addr is not None and not key:
            raise RPCError("rpc server: Need key to present type of resource when tracker is available")
        self.key = key
        self.token = resolve_token(token)
        self.ping_period = ping_period
        self.idle_timeout = idle_timeout
        self.device: DeviceInfo = this_device(key)
        self._listen = bind_first_free(host, port, port_end)
        self.host = host
        self.port = self._listen.getsockname()[1]
        self.limits = limits
        self.max_upload = max_upload
        self._registration = ServerRegistration(key, self.port, tracker_addr, custom_addr, self.token,
                                                ping_period, unmatch_timeout, retry_period, on_registered)
        self._gate: HandshakeGate[tuple[str, dict[str, str]]] = HandshakeGate(
            self._listen, self._read_hello, limits, name=f"tunecli-server-{self.port}")
        self._worker = Worker(preload=(MEASURE_FUNC.partition(":")[0],), name="tunecli-rpc-worker",
                              keeps_state=True)
        self._stop = threading.Event()
        self._wake_r, self._wake_w = socket.socketpair()
        self._thread: threading.Thread | None = None
        self._session_conn: socket.socket | None = None
        self.sessions_served = 0

    def start(self) -> Server:
        """Serve in a background thread of this process; returns self."""
        self._thread = threading.Thread(target=self.serve_forever, name=f"tunecli-server-{self.port}",
                                        daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop a server started with :meth:`start`; it releases its worker and sockets."""
        self._stop.set()
        try:
            self._wake_w.send(b"x")
            if self._session_conn is not None:
                self._session_conn.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        if self._thread is not None:
            self._thread.join(10.0)

    def serve_forever(self) -> None:
        """Register, wait for clients and serve their sessions until :meth:`stop`."""
        logger.info("server %s listening on %s:%d", self.key, self.host, self.port)
        self._worker.start()
        self._gate.start()
        try:
            while not self._stop.is_set():
                matchkey = self._registration.register(self._stop)
                if matchkey is None:
                    continue
                client = self._wait_for_client(matchkey)
                if client is not None:
                    conn, session_timeout = client
                    self._serve_session(conn, session_timeout)
        finally:
            self._registration.close()
            self._worker.close()
            self._gate.close()
            self._listen.close()
            self._wake_r.close()
            self._wake_w.close()

    def _wait_for_client(self, matchkey: str) -> tuple[socket.socket, float] | None:
        """Take accepted handshakes until one presents ``matchkey``; poll the tracker meanwhile."""
        while not self._stop.is_set():
            ready, _, _ = select.select([self._gate, self._wake_r], [], [], self.ping_period)
            if self._gate in ready:
                client = self._gate.pop()
                session_timeout = None if client is None else self._accept_client(*client)
                if session_timeout is not None:
                    return client[0], session_timeout
            elif not ready:
                polled = self._registration.poll(matchkey)
                if polled is None:
                    return None
                matchkey = polled
        return None

    def _read_hello(self, conn: socket.socket, deadline: float) -> tuple[str, dict[str, str]] | None:
        """Read TVM's client handshake (in a gate thread); None after refusing a wrong key or token."""
        if unpack_int(recv_before(conn, 4, deadline)) != RPC_MAGIC:
            return None
        length = unpack_int(recv_before(conn, 4, deadline))
        if length < 0 or length > MAX_HEADER:
            return None
        first, options = parse_key_options(recv_before(conn, length, deadline).decode("utf-8", "replace"))
        if not self._refuse_unless_matching(conn, first, options):
            return None
        return first, options

    def _refuse_unless_matching(self, conn: socket.socket, first: str, options: dict[str, str]) -> bool:
        """True when the client presents the current match key and token; else tell it and say False."""
        matchkey = self._registration.matchkey
        if first == "client:" + matchkey and token_matches(self.token, options.get("token")):
            return True
        logger.warning("mismatch key from %s", conn.getpeername()[0])
        conn.sendall(pack_int(RPC_CODE_MISMATCH))
        return False

    def _accept_client(self, conn: socket.socket, addr: tuple,
                       hello: tuple[str, dict[str, str]]) -> float | None:
        """Answer a handshake read by the gate; returns the session timeout, or None after refusing.

        The key is checked again: the server may have put a new match key since.
        """
        first, options = hello
        try:
            conn.settimeout(self.limits.timeout)
            if not self._refuse_unless_matching(conn, first, options):
                conn.close()
                return None
            server_key = ("server:" + self.key).encode()
            conn.sendall(pack_int(RPC_CODE_SUCCESS) + pack_int(len(server_key)) + server_key)
            keep_alive(conn)  # a client that vanishes mid-session frees the device within minutes
        except OSError:
            conn.close()
            return None
        try:
            return max(0.0, float(options.get("timeout", 0)))
        except ValueError:
            return 0.0

    def _serve_session(self, conn: socket.socket, session_timeout: float) -> None:
        """Serve measurement frames until the client closes, errs, idles or runs out of time."""
        deadline = time.monotonic() + session_timeout if session_timeout else None
        self.sessions_served += 1
        self._session_conn = conn
        ops: SessionOps | None = None
        try:
            while not self._stop.is_set():
                left = self.idle_timeout if deadline is None else deadline - time.monotonic()
                if left <= 0:
                    self._send_error(conn, f"RPCSessionTimeoutError: Your {session_timeout:g}s session has "
                                           "expired, try to increase the \"session_timeout\" value.")
                    return
                conn.settimeout(min(left, self.idle_timeout))
                try:
                    header, payload = recv_frame(conn)
                except TimeoutError:
                    if deadline is not None and time.monotonic() >= deadline:
                        continue  # reported as expired at the top of the loop
                    self._send_error(conn, f"session idle for {self.idle_timeout:g} s, closed")
                    return
                op = header.get("op")
                if op == "close":
                    return
                if op == "describe":
                    send_frame(conn, *encode_device(self.device))
                    continue
                if op in REMOTE_OPS:
                    ops = ops or SessionOps(self._worker, self.device, self.max_upload)
                    try:
                        send_frame(conn, *ops.handle(header, payload, deadline))
                    except SessionRefusal as err:
                        send_frame(conn, {"op": "failed", "error": str(err)})
                    continue
                if op != "measure":
                    self._send_error(conn, f"unknown session op {op!r}")
                    return
                request = decode_request(header, payload)
                if deadline is not None:
                    budget = max(0.1, deadline - time.monotonic())
                    timing = request.timing.with_values(timeout=min(request.timing.timeout, budget))
                    request = dataclasses.replace(request, timing=timing)
                send_frame(conn, *encode_reply(self.measure(request)))
        except PeerClosed:
            logger.debug("session ended by the client")
        except RPCError as err:
            logger.warning("session ended: %s", err)
            self._send_error(conn, str(err))
        except OSError as err:
            logger.info("session ended: %s", err)
        finally:
            self._session_conn = None
            conn.close()
            if ops is not None:
                ops.close()
                if ops.used_worker:  # drop the session's libraries and arrays with the process
                    self._worker.close()
                    self._worker.start()

    def measure(self, request: MeasureRequest) -> MeasureReply:
        """Run one request in the worker process (see :func:`measure_in_worker`).

        Parameters
        ----------
        request : MeasureRequest
            The kernel to measure; ``request.timing.timeout`` bounds the call.

        Returns
        -------
        MeasureReply
            The worker's reply; RUNTIME_DEVICE when the kernel killed the worker, RUN_TIMEOUT
            when it was killed for running past the timeout (its error says so).
        """
        reply = measure_in_worker(self._worker, request)
        if reply.error_no == MeasureErrorNo.RUN_TIMEOUT:
            reply = dataclasses.replace(reply, error=(
                f"{self.device.describe()} killed the kernel: it ran past the request's timeout of "
                f"{request.timing.timeout:g} s ({reply.error})"))
        return reply

    @staticmethod
    def _send_error(conn: socket.socket, message: str) -> None:
        try:
            conn.settimeout(2.0)
            send_frame(conn, {"op": "error", "error": message})
        except OSError:
            pass


def run_server(tracker_addr: tuple[str, int] | None, key: str, host: str = DEFAULT_HOST, port: int = 9090,
               port_end: int = 9199, token: str | None = None, custom_addr: str | None = None,
               ping_period: float = 2.0, unmatch_timeout: float = 4.0, retry_period: float = 5.0,
               idle_timeout: float = 600.0, on_ready: Callable[[str, int], None] | None = None,
               limits: ConnectionLimits = SERVER_LIMITS,
               on_device: Callable[[DeviceInfo], None] | None = None,
               max_upload: int = DEFAULT_MAX_UPLOAD,
               on_registered: Callable[[bool], None] | None = None) -> None:
    """Run a device server in the foreground until interrupted.

    The server runs native code that its clients send: bind an address that only trusted
    clients can reach (loopback by default) and use a token across machines.

    Parameters
    ----------
    tracker_addr : tuple of (str, int) or None
        The tracker to register with (``("10.0.0.1", 9190)``); None serves clients that
        connect with the plain device key.
    key : str
        Device key, e.g. ``"rk3399"``.
    host : str
        Address to bind (loopback by default; ``"0.0.0.0"`` for every interface).
    port, port_end : int
        The first free port in ``[port, port_end)`` is used.
    token : str or None
        Shared token (None reads ``TUNECLI_RPC_TOKEN``).
    custom_addr : str, optional
        Address announced to the tracker.
    ping_period, unmatch_timeout, retry_period, idle_timeout : float
        Tracker polling period, how long a handed-out match key may stay unused, the pause
        between tracker reconnection attempts and the idle limit of a session, in seconds.
    on_ready : callable, optional
        Called as ``on_ready(host, port)`` once the port is bound.
    limits : ConnectionLimits
        Handshake deadline and connection caps.
    on_device : callable, optional
        Called with the server's :class:`DeviceInfo` (its CPU, and its CUDA GPU when it has one)
        once the port is bound.
    max_upload : int
        Bytes a remote session may upload in all.
    on_registered : callable, optional
        Called as ``on_registered(again)`` each time the tracker has taken the server, so that
        clients can ask for it (``again``: after the server lost the tracker).

    Raises
    ------
    RPCError
        When no port is free, or a tracker is given without a key.
    """
    server = Server(host, port, port_end, key, tracker_addr, custom_addr, token,
                    ping_period=ping_period, unmatch_timeout=unmatch_timeout, retry_period=retry_period,
                    idle_timeout=idle_timeout, limits=limits, max_upload=max_upload,
                    on_registered=on_registered)
    for warning in exposure_warnings("server", host, server.token, tracker_addr):
        logger.warning(warning)
    if on_ready is not None:
        on_ready(server.host, server.port)
    if on_device is not None:
        on_device(server.device)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
