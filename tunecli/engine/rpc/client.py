"""The tracker client (control plane) and TVM's ``query_rpc_tracker`` text.

``connect_tracker(host, port)`` gives a :class:`TrackerSession` (TVM's API: ``request``,
``summary``, ``text_summary``); ``request(key)`` waits for a free device of that key and
returns a :class:`tunecli.engine.rpc.remote.RemoteSession` connected to it, through which
kernels are measured.
"""

from __future__ import annotations

import logging
import select
import socket
import time

from tunecli.engine.rpc.protocol import (
    NEEDS_TOKEN,
    RPC_TRACKER_MAGIC,
    TOKEN_CODE,
    AuthenticationError,
    TrackerCode,
    pack_int,
    recv_int,
    recv_json,
    resolve_token,
    send_json,
)
from tunecli.engine.rpc.remote import RemoteSession, connect
from tunecli.engine.rpc.sockets import closing_on_failure, shutdown_socket
from tunecli.errors import RPCError

__all__ = ["RemoteSession", "TrackerLostError", "TrackerSession", "WaitTimeoutError", "connect",
           "connect_tracker", "connect_with_retry", "format_summary", "missing_key_hint", "query_tracker",
           "registered_keys", "registered_servers"]

logger = logging.getLogger("tunecli.rpc.client")


class WaitTimeoutError(RPCError):
    """``request``'s ``wait_timeout`` passed with no free device of the key (the tracker answered)."""


class TrackerLostError(RPCError):
    """The tracker could not be reached, or its connection broke (it stopped or restarted)."""


#: Seconds an indefinite ``request`` waits before it checks that a server of its key exists at all.
NO_SERVER_WARNING_S = 5.0


def connect_with_retry(host: str, port: int, timeout: float = 10.0, period: float = 0.5) -> socket.socket:
    """Open a TCP connection, retrying refused connections for up to ``timeout`` seconds.

    Raises
    ------
    RPCError
        When no connection could be made in time.
    """
    deadline = time.monotonic() + timeout
    while True:
        try:
            return socket.create_connection((host, port), timeout=max(1.0, min(timeout, 10.0)))
        except OSError as err:
            if time.monotonic() + period > deadline:
                raise RPCError(f"rpc connect: cannot connect to {host}:{port} ({err})") from None
            time.sleep(period)


class TrackerSession:
    """A connection to a tracker (TVM's ``TrackerSession``).

    Parameters
    ----------
    addr : tuple of (str, int)
        The tracker's address.
    token : str or None
        Shared token (None reads ``TUNECLI_RPC_TOKEN``).
    timeout : float
        Seconds to keep retrying a refused connection.
    """

    def __init__(self, addr: tuple[str, int], token: str | None = None, timeout: float = 10.0) -> None:
        self._addr = addr
        self._token = resolve_token(token)
        self._timeout = timeout
        self._sock: socket.socket | None = None
        self._connect()

    def _connect(self) -> None:
        host, port = self._addr
        try:
            sock = connect_with_retry(host, port, self._timeout)
        except RPCError as err:
            raise RPCError(f"{err}: is a tracker running there? (`tunecli tracker --port {port}` starts one; "
                           "`tunecli query` and runners take its address)") from None
        with closing_on_failure(sock, f"tracker {host}:{port}"):
            sock.settimeout(10.0)
            sock.sendall(pack_int(RPC_TRACKER_MAGIC))
            try:
                magic = recv_int(sock)
            except RPCError:
                magic = None
            if magic != RPC_TRACKER_MAGIC:
                what = "closed the connection at" if magic is None else "answered something else to"
                raise RPCError(f"{host}:{port} is not RPC Tracker: it {what} the tracker handshake "
                               "(a device server's port? give the port `tunecli tracker` printed, "
                               "9190 by default)")
            if self._token:
                send_json(sock, [TOKEN_CODE, self._token])
                if recv_json(sock) != TrackerCode.SUCCESS:
                    raise AuthenticationError(f"tracker {host}:{port}: token refused")
        self._sock = sock

    def call(self, msg: list) -> object:
        """Send one raw tracker request and return its reply (reconnecting first if needed).

        Raises
        ------
        RPCError
            When the connection fails; the session is closed then.
        """
        if self._sock is None:
            self._connect()
        assert self._sock is not None
        try:
            self._sock.settimeout(10.0)
            send_json(self._sock, msg)
            return recv_json(self._sock)
        except AuthenticationError:
            self.close()
            raise
        except (OSError, RPCError) as err:
            self.close()
            raise RPCError(f"tracker {self._addr[0]}:{self._addr[1]}: {err}") from None

    def close(self) -> None:
        """Close the tracker connection (idempotent)."""
        sock, self._sock = self._sock, None
        if sock is not None:
            sock.close()

    def abort(self) -> None:
        """Break the connection from another thread (a blocked :meth:`request` raises)."""
        shutdown_socket(self._sock)

    def summary(self) -> dict:
        """Return the tracker's summary ``{"queue_info": ..., "server_info": ...}``.

        Raises
        ------
        RPCError
            When the tracker answers anything but ``[0, {...}]``.
        """
        if self._sock is not None and select.select([self._sock], [], [], 0)[0]:
            self.close()  # nothing is due before a request: the tracker closed an idle connection
        value = self.call([TrackerCode.SUMMARY])
        if not isinstance(value, list) or len(value) != 2 or value[0] != TrackerCode.SUCCESS \
                or not isinstance(value[1], dict):
            raise self._invalid_reply(value)
        return value[1]

    def _invalid_reply(self, value: object) -> RPCError:
        """Explain a reply that is not a success: a refusal for want of a token, or garbage."""
        where = f"tracker {self._addr[0]}:{self._addr[1]}"
        if value == TrackerCode.FAIL and not self._token:
            return AuthenticationError(f"{where}: the tracker refused the request: {NEEDS_TOKEN}")
        return RPCError(f"{where}: Invalid return value {value!s}")

    def text_summary(self) -> str:
        """Return the summary as TVM v0.14's ``query_rpc_tracker`` prints it."""
        return format_summary(self.summary())

    def request(self, key: str, priority: int = 1, session_timeout: float = 0, max_retry: int = 5,
                wait_timeout: float | None = None) -> RemoteSession:
        """Wait for a free device of ``key`` and connect to it.

        Parameters
        ----------
        key : str
            The device key.
        priority : int
            Higher is served first.
        session_timeout : float
            Seconds after which the server may end the session (0: no limit).
        max_retry : int
            Attempts (tracker or server failures) before giving up.
        wait_timeout : float, optional
            Seconds to wait in the tracker's queue; None waits indefinitely (TVM's behaviour).

        Returns
        -------
        RemoteSession
            A session with the matched server.

        Raises
        ------
        WaitTimeoutError
            When ``wait_timeout`` elapsed (the tracker connection is then closed, which withdraws
            the request).
        TrackerLostError
            After ``max_retry`` failures, the last one of the tracker (unreachable, or its
            connection broke).
        RPCError
            After ``max_retry`` failures, the last one connecting to the matched server.
        """
        last_err: Exception | None = None
        deadline = None if wait_timeout is None else time.monotonic() + wait_timeout
        for _ in range(max(1, max_retry)):
            try:
                if self._sock is None:
                    self._connect()
                assert self._sock is not None
                self._sock.settimeout(10.0)
                send_json(self._sock, [TrackerCode.REQUEST, key, "", priority])
                self._wait_readable(deadline, key, warn_at=time.monotonic() + NO_SERVER_WARNING_S
                                    if wait_timeout is None else None)
                value = recv_json(self._sock)
                if not (isinstance(value, list) and len(value) == 2 and value[0] == TrackerCode.SUCCESS
                        and isinstance(value[1], list) and len(value[1]) == 3):
                    raise self._invalid_reply(value)
            except TimeoutError as err:
                self.close()
                raise WaitTimeoutError(f"tracker {self._addr[0]}:{self._addr[1]}: {err}") from None
            except AuthenticationError:
                self.close()
                raise
            except (OSError, RPCError) as err:
                self.close()
                last_err = TrackerLostError(str(err))
                continue
            host, port, matchkey = value[1]
            try:
                return connect(host, port, matchkey, session_timeout, self._token)
            except AuthenticationError:
                self.close()
                raise
            except (OSError, RPCError) as err:
                last_err = err
        kind = TrackerLostError if isinstance(last_err, TrackerLostError) else RPCError
        raise kind(f"Cannot request {key} after {max_retry} retry, last_error:{last_err!s}")

    def _wait_readable(self, deadline: float | None, key: str, warn_at: float | None = None) -> None:
        """Block until the deferred REQUEST reply arrives or ``deadline`` passes; at ``warn_at``,
        warn (once) when the tracker has no server of ``key`` at all (a mistyped key waits forever)."""
        assert self._sock is not None
        while True:
            now = time.monotonic()
            left = None if deadline is None else deadline - now
            if left is not None and left <= 0:
                raise TimeoutError(f"no free device of key {key!r} within the wait timeout")
            if warn_at is not None and now >= warn_at:
                warn_at = None
                self._warn_unless_registered(key)
            ready, _, _ = select.select([self._sock], [], [], 1.0 if left is None else min(left, 1.0))
            if ready:
                return

    def _warn_unless_registered(self, key: str) -> None:
        """Log a warning when the tracker has no server of ``key`` (asked on a connection of its own)."""
        try:
            keys = registered_keys(registered_servers(*self._addr, token=self._token))
        except RPCError:
            return
        if key not in keys:
            host, port = self._addr
            logger.warning("still waiting for a device of key %r: %s; start one with `tunecli server "
                           "--tracker %s:%d --key %s`", key, missing_key_hint(f"{host}:{port}", key, keys),
                           host, port, key)

    def __enter__(self) -> TrackerSession:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def connect_tracker(host: str, port: int, token: str | None = None, timeout: float = 10.0) -> TrackerSession:
    """Connect to a tracker.

    Parameters
    ----------
    host, port : str, int
        The tracker's address.
    token : str or None
        Shared token (None reads ``TUNECLI_RPC_TOKEN``).
    timeout : float
        Seconds to keep retrying a refused connection.

    Returns
    -------
    TrackerSession
        The connected session.
    """
    return TrackerSession((host, port), token, timeout)


def registered_servers(host: str, port: int, token: str | None = None) -> list[dict]:
    """The servers registered with the tracker at ``host:port`` (its summary's ``server_info``).

    Raises
    ------
    AuthenticationError
        When the tracker refuses the token (or wants one).
    RPCError
        When no tracker answers there (saying why: nothing listens, not a tracker, ...).
    """
    with connect_tracker(host, port, token, timeout=2.0) as tracker:
        servers = tracker.summary().get("server_info")
    if not isinstance(servers, list):
        raise RPCError(f"tracker {host}:{port}: its summary lists no servers ({servers!r})")
    return [info for info in servers if isinstance(info, dict)]


def registered_keys(servers: list[dict], unique: bool = True) -> list[str]:
    """The device keys of registered servers (``server_info`` items), sorted; each once if ``unique``."""
    keys = [str(item.get("key", "")) for item in servers]
    keys = [k.split(":", 1)[1] for k in keys if k.startswith("server:")]
    return sorted(set(keys) if unique else keys)


def missing_key_hint(tracker: str, key: str, keys: list[str]) -> str:
    """Say that the tracker has no server of ``key`` and which keys it has."""
    has = ", ".join(repr(k) for k in keys) if keys else "none"
    return f"the tracker {tracker} has no server of key {key!r} (its keys: {has})"


def format_summary(data: dict) -> str:
    """Render a tracker summary exactly like TVM v0.14's ``TrackerSession.text_summary``."""
    total_ct: dict[str, int] = {}
    res = "Server List\n"
    res += "------------------------------\n"
    res += "server-address           key\n"
    res += "------------------------------\n"
    for item in sorted(data["server_info"], key=lambda x: x["key"]):
        res += f"{':'.join(map(str, item['addr'])):>21}    "
        res += item["key"] + "\n"
        key = item["key"].split(":")[1]
        total_ct[key] = total_ct.get(key, 0) + 1
    res += "------------------------------\n"
    res += "\n"
    queue_info = data["queue_info"]
    keys = sorted(queue_info)
    width = max((len(k) for k in keys), default=0)
    res += "Queue Status\n"
    title = f"{'key':<{width}}   total  free  pending\n"
    separate_line = "-" * len(title) + "\n"
    res += separate_line + title + separate_line
    for k in keys:
        total = total_ct.get(k, 0)
        free, pending = queue_info[k]["free"], queue_info[k]["pending"]
        if total or pending:
            res += f"{k:<{width}}   {total:<5d}  {free:<4d}  {pending:<7d}\n"
    res += separate_line
    return res


def query_tracker(host: str = "127.0.0.1", port: int = 9190, token: str | None = None) -> str:
    """Return what TVM's ``python -m tvm.exec.query_rpc_tracker`` prints (minus print's last newline).

    Parameters
    ----------
    host, port : str, int
        The tracker's address.
    token : str or None
        Shared token (None reads ``TUNECLI_RPC_TOKEN``).

    Returns
    -------
    str
        ``"Tracker address HOST:PORT\\n\\n"`` followed by the text summary.
    """
    with connect_tracker(host, port, token) as session:
        return f"Tracker address {host}:{int(port)}\n\n{session.text_summary()}"
