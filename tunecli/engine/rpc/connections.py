"""Admission of incoming connections, shared by the tracker and the device servers.

A peer that connects and says nothing, or says half a message and stops, must not hold a
service up nor pile up connections. Three rules, set by a :class:`ConnectionLimits` record:

* a connection has ``timeout`` seconds to complete its handshake (and, at the tracker, each
  message it starts, and any silence while it holds nothing there);
* one peer address holds at most ``per_peer`` connections; the next one is closed at once;
* at most ``total`` connections are held at once (server: connections whose handshake is being
  read or that wait for the device; tracker: all).

Connections that may stay silent for long (registered servers, waiting requests, sessions)
get TCP keepalive (:func:`keep_alive`), so one whose peer vanished is dropped within minutes.

:class:`PeerLimiter` counts connections per peer address. :class:`HandshakeGate` accepts
connections on a device server's listening socket in a background thread and reads each
handshake in a thread of its own under a deadline, so silent peers delay nobody; the
connections whose handshake was accepted wait in arrival order for the serving thread.

Services bind :data:`DEFAULT_HOST` (loopback) unless told otherwise: a device server runs
native code its clients send, so making it reachable from other machines is a deliberate
choice (bind ``0.0.0.0`` together with a token and a firewall).
"""

from __future__ import annotations

import collections
import dataclasses
import ipaddress
import logging
import select
import socket
import threading
import time
from collections.abc import Callable
from typing import Generic, TypeVar

from tunecli.engine.rpc.protocol import recv_all
from tunecli.errors import RPCError

logger = logging.getLogger("tunecli.rpc.connections")

#: Address the tracker and the device servers bind unless told otherwise (loopback only).
DEFAULT_HOST = "127.0.0.1"

Hello = TypeVar("Hello")

#: What a peer that reaches each kind of service can do.
_POWERS = {
    "server": "run native code on this machine",
    "tracker": "register devices and take them from tuning jobs",
}


@dataclasses.dataclass(frozen=True)
class ConnectionLimits:
    """How long a connection may keep a service waiting, and how many connections it holds.

    Attributes
    ----------
    timeout : float
        Seconds a connection has to complete its handshake (tracker: also to finish a message
        it started, and to send its next request while it holds nothing there).
    per_peer : int
        Connections one peer address may hold at once; the next one is closed at once.
    total : int
        Connections held at once (server: handshaking or waiting for the device; tracker: all).
    """

    timeout: float = 5.0
    per_peer: int = 8
    total: int = 64

    def __post_init__(self) -> None:
        if not self.timeout > 0 or self.per_peer < 1 or self.total < 1:
            raise RPCError(f"connection limits: need timeout > 0, per_peer >= 1 and total >= 1, got {self}")


#: A device server: one session at a time, so few connections per peer are legitimate.
SERVER_LIMITS = ConnectionLimits(timeout=5.0, per_peer=8, total=64)
#: A tracker: every device server and every device thread of a tuner holds one connection.
TRACKER_LIMITS = ConnectionLimits(timeout=10.0, per_peer=128, total=1024)


class PeerLimiter:
    """Count open connections per peer address (thread-safe).

    Parameters
    ----------
    limits : ConnectionLimits
        ``per_peer`` and ``total`` are enforced.
    """

    def __init__(self, limits: ConnectionLimits) -> None:
        self.limits = limits
        self._counts: collections.Counter[str] = collections.Counter()
        self._lock = threading.Lock()

    def admit(self, host: str) -> bool:
        """Count one more connection of ``host``; False (nothing counted) when a limit is reached."""
        with self._lock:
            if self._counts[host] >= self.limits.per_peer or self.total() >= self.limits.total:
                return False
            self._counts[host] += 1
            return True

    def release(self, host: str) -> None:
        """Forget one connection of ``host`` (admitted before)."""
        with self._lock:
            self._counts[host] -= 1
            if self._counts[host] <= 0:
                del self._counts[host]

    def total(self) -> int:
        """Connections counted now."""
        return sum(self._counts.values())


def recv_before(sock: socket.socket, nbytes: int, deadline: float) -> bytes:
    """Read exactly ``nbytes`` from ``sock`` before the ``time.monotonic()`` deadline
    (:func:`~tunecli.engine.rpc.protocol.recv_all` with a deadline).

    Raises
    ------
    TimeoutError
        When the deadline passes first (however slowly the peer trickles bytes).
    RPCError
        When the peer closes the connection first.
    """
    return recv_all(sock, nbytes, deadline)


def keep_alive(sock: socket.socket, idle: int = 60, interval: int = 10, count: int = 3) -> None:
    """Have the kernel probe ``sock`` when idle, so that a connection whose peer vanished without
    closing it (a half-open connection: machine off, network gone) breaks after about
    ``idle + interval * count`` seconds instead of being held forever."""
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
    for name, value in (("TCP_KEEPIDLE", idle), ("TCP_KEEPINTVL", interval), ("TCP_KEEPCNT", count)):
        if hasattr(socket, name):  # not on every platform
            sock.setsockopt(socket.IPPROTO_TCP, getattr(socket, name), value)


def peer_closed(sock: socket.socket) -> bool:
    """True when the peer of an idle connection has closed it (or it is broken)."""
    try:
        if not select.select([sock], [], [], 0)[0]:
            return False
        return sock.recv(1, socket.MSG_PEEK) == b""
    except (OSError, ValueError):
        return True


class HandshakeGate(Generic[Hello]):
    """Accept connections and read their handshakes concurrently, under a deadline each.

    Parameters
    ----------
    listen : socket.socket
        The listening socket (owned by the caller).
    read_hello : callable
        ``read_hello(conn, deadline)`` reads a handshake (using :func:`recv_before`) and returns
        what the serving thread needs, or None after refusing the connection itself. It runs
        in a thread of its own; whatever it raises closes the connection.
    limits : ConnectionLimits
        Handshake deadline and connection caps.
    name : str
        Thread name prefix.

    Notes
    -----
    The gate is selectable (``select([gate], ...)``): it is readable while an accepted
    connection waits for :meth:`pop`.
    """

    def __init__(self, listen: socket.socket, read_hello: Callable[[socket.socket, float], Hello | None],
                 limits: ConnectionLimits = SERVER_LIMITS, name: str = "tunecli-gate") -> None:
        self._listen = listen
        self._read_hello = read_hello
        self.limits = limits
        self._name = name
        self._peers = PeerLimiter(limits)
        self._ready: collections.deque[tuple[socket.socket, tuple, Hello]] = collections.deque()
        self._lock = threading.Lock()
        self._ready_r, self._ready_w = socket.socketpair()
        self._stop_r, self._stop_w = socket.socketpair()
        self._closed = False
        self._thread = threading.Thread(target=self._accept_loop, name=f"{name}-accept", daemon=True)

    def start(self) -> HandshakeGate[Hello]:
        """Start accepting in the background; returns self."""
        self._thread.start()
        return self

    def fileno(self) -> int:
        """A descriptor that is readable while a connection waits for :meth:`pop`."""
        return self._ready_r.fileno()

    def pop(self) -> tuple[socket.socket, tuple, Hello] | None:
        """Take the oldest accepted connection as ``(conn, peer address, hello)``.

        Returns None when none is waiting, or when the oldest one was closed by its peer
        while it waited (it is discarded).
        """
        with self._lock:
            if not self._ready:
                return None
            self._ready_r.recv(1)
            conn, addr, hello = self._ready.popleft()
            self._peers.release(addr[0])
        if peer_closed(conn):
            conn.close()
            return None
        return conn, addr, hello

    def close(self) -> None:
        """Stop accepting, close the connections still waiting and join the accept thread."""
        self._closed = True
        try:
            self._stop_w.send(b"x")
        except OSError:
            pass
        if self._thread.is_alive():
            self._thread.join(10.0)
        with self._lock:
            while self._ready:
                self._ready.popleft()[0].close()
        for sock in (self._ready_r, self._ready_w, self._stop_r, self._stop_w):
            sock.close()

    def _accept_loop(self) -> None:
        while not self._closed:
            ready, _, _ = select.select([self._listen, self._stop_r], [], [])
            if self._stop_r in ready:
                return
            try:
                conn, addr = self._listen.accept()
            except OSError as err:  # e.g. out of descriptors: let the backlog wait a moment
                logger.warning("%s: accept failed (%s)", self._name, err)
                time.sleep(0.1)
                continue
            if not self._peers.admit(addr[0]):
                logger.warning("%s: too many connections from %s (limit %d per peer, %d in all), closing",
                               self._name, addr[0], self.limits.per_peer, self.limits.total)
                conn.close()
                continue
            deadline = time.monotonic() + self.limits.timeout
            threading.Thread(target=self._handshake, args=(conn, addr, deadline),
                             name=f"{self._name}-handshake", daemon=True).start()

    def _handshake(self, conn: socket.socket, addr: tuple, deadline: float) -> None:
        hello = None
        try:
            hello = self._read_hello(conn, deadline)
        except TimeoutError:
            logger.info("%s: %s did not complete its handshake within %g s, closing",
                        self._name, addr[0], self.limits.timeout)
        except (OSError, RPCError) as err:
            logger.info("%s: handshake with %s failed (%s)", self._name, addr[0], err)
        with self._lock:
            if hello is not None and not self._closed:
                self._ready.append((conn, addr, hello))
                self._ready_w.send(b"x")
                return
            self._peers.release(addr[0])
        conn.close()


def is_loopback(host: str) -> bool:
    """True when ``host`` (an address or a name, resolved) is this machine's loopback interface."""
    try:
        return ipaddress.ip_address(socket.gethostbyname(host)).is_loopback
    except (OSError, ValueError):
        return False


def exposure_warnings(service: str, host: str, token: str | None,
                      tracker_addr: tuple[str, int] | None = None) -> list[str]:
    """Warnings about who can reach a ``"server"`` or ``"tracker"`` bound to ``host``.

    Parameters
    ----------
    service : str
        ``"server"`` or ``"tracker"``.
    host : str
        The address bound.
    token : str or None
        The token in force (None: none).
    tracker_addr : tuple of (str, int), optional
        The tracker a server registers with.

    Returns
    -------
    list of str
        One message when a service reachable beyond loopback has no token, one when a server
        bound to loopback registers with a tracker on another machine (whose clients could
        then not reach it); empty when neither applies.
    """
    warnings = []
    local = is_loopback(host)
    if not local and not token:
        warnings.append(f"{service} on {host} has no token: anyone who can reach it can {_POWERS[service]}; "
                        "set TUNECLI_RPC_TOKEN (and firewall the port)")
    if service == "server" and local and tracker_addr is not None and not is_loopback(tracker_addr[0]):
        warnings.append(f"server bound to {host} registers with the tracker at {tracker_addr[0]}:"
                        f"{tracker_addr[1]}, whose clients cannot reach it; bind 0.0.0.0 "
                        "(with a token) to serve other machines")
    return warnings
