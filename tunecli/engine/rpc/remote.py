"""The data-plane client: TVM's handshake with a device server, then a measurement session.

``connect(host, port, key)`` performs the handshake of :mod:`tunecli.engine.rpc.protocol`
and returns a :class:`RemoteSession`; ``session.measure(request)`` sends one kernel and returns
the device's reply (:mod:`tunecli.engine.rpc.session` frames), and TVM's remote session API
(``upload``, ``load_module``, ``cpu()``, ... of :class:`tunecli.engine.rpc.remote_api.RemoteAPI`)
runs whole networks there.
"""

from __future__ import annotations

import select
import socket

from tunecli.engine.measure.worker import STARTUP_TIMEOUT
from tunecli.engine.rpc.device_info import DeviceInfo
from tunecli.engine.rpc.protocol import (
    MAX_HEADER,
    RPC_CODE_DUPLICATE,
    RPC_CODE_MISMATCH,
    RPC_CODE_SUCCESS,
    RPC_MAGIC,
    check_length,
    pack_int,
    recv_all,
    recv_frame,
    recv_int,
    resolve_token,
    send_frame,
)
from tunecli.engine.rpc.remote_api import RemoteAPI
from tunecli.engine.rpc.session import (
    DESCRIBE,
    MeasureReply,
    MeasureRequest,
    decode_device,
    decode_reply,
    encode_request,
)
from tunecli.engine.rpc.sockets import closing_on_failure, shutdown_socket
from tunecli.errors import RPCError

#: Seconds a client waits for a reply beyond the request's timeout: a server replaces a worker
#: that a crashing or hanging kernel killed before it runs the next kernel, which may take up to
#: the worker's start-up timeout on a slow (or emulated) board.
REPLY_SLACK = STARTUP_TIMEOUT + 10.0
#: Seconds a client waits for the answer to a remote-API call (a network run on a slow board).
CALL_TIMEOUT = 3600.0


class RemoteSession(RemoteAPI):
    """A session with one device server (after the handshake): measurement, and TVM's remote API.

    Attributes
    ----------
    remote_key : str
        What the server announced, ``"server:<key>"``.
    addr : tuple of (str, int)
        The server's address.
    """

    def __init__(self, sock: socket.socket, remote_key: str, addr: tuple[str, int]) -> None:
        self._sock: socket.socket | None = sock
        self.remote_key = remote_key
        self.addr = addr

    def measure(self, request: MeasureRequest, timeout: float | None = None) -> MeasureReply:
        """Send one kernel to the device and wait for its reply.

        Parameters
        ----------
        request : MeasureRequest
            The kernel and its timing parameters.
        timeout : float, optional
            Seconds to wait for the reply (default: the request's timeout plus
            :data:`REPLY_SLACK`, since the server enforces the request's timeout itself).

        Raises
        ------
        RPCError
            When the connection fails or the server answers with a session error; the session
            is closed then.
        """
        if self._sock is None:
            raise RPCError(f"rpc session {self.addr[0]}:{self.addr[1]}: session is closed")
        header, payload = encode_request(request)
        try:
            self._sock.settimeout(timeout if timeout is not None else request.timing.timeout + REPLY_SLACK)
            if select.select([self._sock], [], [], 0)[0]:  # the server ended the session meanwhile
                decode_reply(*recv_frame(self._sock))
                raise RPCError("server sent an unexpected frame")
            send_frame(self._sock, header, payload)
            return decode_reply(*recv_frame(self._sock))
        except (OSError, RPCError) as err:
            self.close()
            raise RPCError(f"rpc session {self.addr[0]}:{self.addr[1]}: {err}") from None

    def exchange(self, header: dict, payload: bytes = b"",
                 timeout: float = CALL_TIMEOUT) -> tuple[dict, bytes]:
        """Send one remote-API frame and return the server's ``ok`` answer (header, payload).

        Raises
        ------
        RPCError
            When the server refuses the request (the session goes on), or the connection fails or
            the server ends the session (it is closed then).
        """
        where = f"rpc session {self.addr[0]}:{self.addr[1]}"
        if self._sock is None:
            raise RPCError(f"{where}: session is closed")
        try:
            self._sock.settimeout(timeout)
            send_frame(self._sock, header, payload)
            reply, data = recv_frame(self._sock)
        except (OSError, RPCError) as err:
            self.close()
            raise RPCError(f"{where}: {err}") from None
        if reply.get("op") == "failed":
            raise RPCError(f"{where}: {reply.get('error', '')}")
        if reply.get("op") != "ok":
            self.close()
            detail = reply.get("error") if reply.get("op") == "error" else \
                f"unexpected frame {reply.get('op')!r}"
            raise RPCError(f"{where}: the server ended the session: {detail}")
        return reply, data

    def describe(self, timeout: float = 30.0) -> DeviceInfo:
        """The processor the server runs kernels on.

        Raises
        ------
        RPCError
            When the connection fails or the server does not answer with a description; the
            session is closed then.
        """
        if self._sock is None:
            raise RPCError(f"rpc session {self.addr[0]}:{self.addr[1]}: session is closed")
        try:
            self._sock.settimeout(timeout)
            send_frame(self._sock, DESCRIBE)
            header, _ = recv_frame(self._sock)
            return decode_device(header)
        except (OSError, RPCError) as err:
            self.close()
            raise RPCError(f"rpc session {self.addr[0]}:{self.addr[1]}: {err}") from None

    def abort(self) -> None:
        """Break the connection from another thread (a blocked :meth:`measure` raises)."""
        shutdown_socket(self._sock)

    def close(self) -> None:
        """End the session politely (idempotent); the server then frees the device."""
        sock, self._sock = self._sock, None
        if sock is None:
            return
        try:
            sock.settimeout(2.0)
            send_frame(sock, {"op": "close"})
        except OSError:
            pass
        sock.close()

    def __enter__(self) -> RemoteSession:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def connect(host: str, port: int, key: str = "", session_timeout: float = 0,
            token: str | None = None, timeout: float = 10.0) -> RemoteSession:
    """Connect to a device server with TVM's data-plane handshake.

    Parameters
    ----------
    host, port : str, int
        The server's address.
    key : str
        The match key given by the tracker (or the device key of a server without tracker).
    session_timeout : float
        Seconds after which the server may end the session (0: no limit).
    token : str or None
        Shared token (None reads ``TUNECLI_RPC_TOKEN``).
    timeout : float
        Seconds allowed for connecting and the handshake.

    Returns
    -------
    RemoteSession
        The connected session.

    Raises
    ------
    RPCError
        When the server refuses the key, is not an RPC server, or cannot be reached.
    """
    token = resolve_token(token)
    keystr = "client:" + key
    if session_timeout:
        keystr += f" -timeout={session_timeout}"
    if token:
        keystr += f" -token={token}"
    where = f"rpc connect {host}:{port}"
    try:
        sock = socket.create_connection((host, port), timeout=timeout)
    except OSError as err:
        raise RPCError(f"{where}: {err}") from None
    with closing_on_failure(sock, where):
        data = keystr.encode()
        sock.sendall(pack_int(RPC_MAGIC) + pack_int(len(data)) + data)
        try:
            code: int | None = recv_int(sock)
        except RPCError:
            code = None
        if code == RPC_CODE_MISMATCH:
            raise RPCError(f"{where}: cannot find server that matches key {key} (a server registered with "
                           "a tracker takes only the keys that tracker hands out: ask the tracker, "
                           f"connect_tracker(host, port).request({key.split(':')[0]!r}); one without a "
                           "tracker takes its --key, and the token if it has one)")
        if code == RPC_CODE_DUPLICATE:
            raise RPCError(f"{where}: server already have key {key}")
        if code != RPC_CODE_SUCCESS:
            what = "closed the connection at" if code is None else "answered something else to"
            raise RPCError(f"{where}: is not TVM RPC server: it {what} the server handshake (a tracker's "
                           "port? ask the tracker for a device: connect_tracker(host, port).request(key); "
                           "or a server refusing more connections from this address)")
        length = recv_int(sock)
        check_length(length, MAX_HEADER, where)
        remote_key = recv_all(sock, length).decode("utf-8", "replace")
    return RemoteSession(sock, remote_key, (host, port))
