"""Wire protocol shared by the tracker, the device servers and their clients.

Everything here follows TVM's ``python/tvm/rpc/base.py`` so that TVM's own tools can talk to
our tracker and servers (and ours to theirs), plus two tunecli additions: size limits and an
optional shared token.

Control plane (tracker)
    TCP. The client sends ``struct.pack("<i", RPC_TRACKER_MAGIC)``, the tracker answers the same
    four bytes. Afterwards every message, in both directions, is an ``int32`` little-endian
    length followed by that many bytes of UTF-8 JSON. Requests are JSON arrays whose first
    element is a :class:`TrackerCode`. A declared length above :data:`MAX_TRACKER_MESSAGE`
    (64 KiB) or below 1 closes the connection.

Data plane (device server)
    The client sends ``RPC_MAGIC``, the length of its key string and the key string
    ``"client:<matchkey>[ -timeout=<s>][ -token=<token>]"``; the server answers
    ``RPC_CODE_SUCCESS`` followed by the length and bytes of ``"server:<key>"``, or
    ``RPC_CODE_MISMATCH`` and closes. After the handshake tunecli speaks its own session
    protocol (TVM's packed-function protocol is out of scope): *frames* made of an ``int32``
    length, a UTF-8 JSON header object of at most :data:`MAX_HEADER` bytes and, when the header
    has ``"payload_len": n``, ``n`` raw bytes (at most :data:`MAX_PAYLOAD`, 16 MiB). See
    :mod:`tunecli.engine.rpc.session` for the frames a session exchanges.

Token authentication (tunecli extension)
    A tracker or server started with a token (argument, or environment variable
    ``TUNECLI_RPC_TOKEN``) only serves peers that present it; without a token the protocol is
    byte-for-byte TVM's, so TVM clients and servers keep working.

    * Tracker: the first message after the magic must be ``[TOKEN_CODE, "<token>"]``
      (``TOKEN_CODE = 100`` lies outside TVM's codes -1..7). The tracker replies ``0``, or ``-1``
      and closes on a wrong or missing token. A client holding a token sends it to a tracker
      that has none: such a tracker replies ``0`` too, so the exchange always succeeds.
    * Server: the client appends the option ``-token=<token>`` to its key string; a wrong or
      missing token is answered with ``RPC_CODE_MISMATCH`` like a wrong match key.

    Tokens are compared with :func:`hmac.compare_digest`. They travel in clear text: they keep
    stray clients out of a lab network, they are no substitute for a private network.
"""

from __future__ import annotations

import enum
import hmac
import json
import os
import random
import socket
import struct
import time

from tunecli.errors import RPCError

RPC_MAGIC = 0xFF271
RPC_TRACKER_MAGIC = 0x2F271
RPC_CODE_SUCCESS = RPC_MAGIC + 0
RPC_CODE_DUPLICATE = RPC_MAGIC + 1
RPC_CODE_MISMATCH = RPC_MAGIC + 2
RPC_SESS_MASK = 128

#: Tracker code that carries the token (tunecli extension, outside TVM's range).
TOKEN_CODE = 100
#: Largest control-plane (tracker) message, in bytes.
MAX_TRACKER_MESSAGE = 64 * 1024
#: Largest JSON header of a data-plane frame, and largest handshake key string.
MAX_HEADER = 64 * 1024
#: Largest raw payload of a data-plane frame (kernel objects, reference outputs).
MAX_PAYLOAD = 16 * 1024 * 1024
#: Environment variable holding the shared token when none is passed explicitly.
TOKEN_ENV = "TUNECLI_RPC_TOKEN"

_INT = struct.Struct("<i")


class PeerClosed(RPCError):
    """The peer closed the connection between two frames: the normal end of a session."""


class AuthenticationError(RPCError):
    """A tracker or server refused our token, or wants one we did not give."""


NEEDS_TOKEN = f"it requires a token: give one to the client, or set {TOKEN_ENV}"


class TrackerCode(enum.IntEnum):
    """Request codes of the tracker protocol (TVM's ``TrackerCode``)."""

    FAIL = -1
    SUCCESS = 0
    PING = 1
    STOP = 2
    PUT = 3
    REQUEST = 4
    UPDATE_INFO = 5
    SUMMARY = 6
    GET_PENDING_MATCHKEYS = 7


def resolve_token(token: str | None) -> str | None:
    """Return ``token``, or the value of ``TUNECLI_RPC_TOKEN`` when ``token`` is None.

    Parameters
    ----------
    token : str or None
        An explicit token; the empty string means "no token" even if the variable is set.

    Returns
    -------
    str or None
        The token to use, None when authentication is off.

    Raises
    ------
    RPCError
        When the token contains whitespace (it travels inside the handshake key string).
    """
    if token is None:
        token = os.environ.get(TOKEN_ENV)
    if token and (token.split() != [token]):
        raise RPCError(f"rpc token: a token may not contain whitespace (from {TOKEN_ENV} or the option)")
    return token or None


def token_matches(expected: str | None, given: object) -> bool:
    """Compare a presented token with the expected one in constant time.

    Parameters
    ----------
    expected : str or None
        The token the service was started with; None accepts everything.
    given : object
        What the peer presented (anything; non-strings never match).

    Returns
    -------
    bool
        True when access is granted.
    """
    if expected is None:
        return True
    if not isinstance(given, str):
        return False
    return hmac.compare_digest(expected.encode(), given.encode())


def random_key(prefix: str, exclude: set[str] | frozenset[str] = frozenset()) -> str:
    """Make a match key ``f"{prefix}:{random.random()}"`` not in ``exclude`` (TVM's rule).

    Parameters
    ----------
    prefix : str
        The device key.
    exclude : set of str
        Keys already used.

    Returns
    -------
    str
        A fresh match key.
    """
    while True:
        key = f"{prefix}:{random.random()}"
        if key not in exclude:
            return key


def split_random_key(matchkey: str) -> str:
    """Return the device key of a match key (``rsplit(":", 1)[0]``, so keys may contain ``:``)."""
    return matchkey.rsplit(":", 1)[0]


def pack_int(value: int) -> bytes:
    """Encode one little-endian int32."""
    return _INT.pack(value)


def unpack_int(data: bytes) -> int:
    """Decode one little-endian int32."""
    return _INT.unpack(data)[0]


def recv_all(sock: socket.socket, nbytes: int, deadline: float | None = None) -> bytes:
    """Read exactly ``nbytes`` from ``sock``.

    Parameters
    ----------
    sock : socket.socket
        A connected socket (without a deadline its timeout applies to each chunk).
    nbytes : int
        Number of bytes to read.
    deadline : float, optional
        A ``time.monotonic()`` time by which all of the bytes must have come, however slowly the
        peer trickles them (the socket's timeout is set to what is left before each chunk).

    Returns
    -------
    bytes
        The data.

    Raises
    ------
    RPCError
        When the peer closes the connection first.
    TimeoutError
        When the deadline passes first.
    """
    chunks = []
    remaining = nbytes
    while remaining > 0:
        if deadline is not None:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"{remaining} bytes missing at the deadline")
            sock.settimeout(left)
        chunk = sock.recv(min(remaining, 1 << 20))
        if not chunk:
            raise RPCError(f"rpc protocol: connection reset by {_peer(sock)} ({remaining} bytes missing)")
        chunks.append(chunk)
        remaining -= len(chunk)
    return b"".join(chunks)


def recv_int(sock: socket.socket) -> int:
    """Read one little-endian int32 from ``sock``."""
    return unpack_int(recv_all(sock, 4))


def encode_json(obj: object) -> bytes:
    """Return the framed form (``<i`` length + UTF-8 JSON, ``json.dumps`` defaults) of ``obj``."""
    data = json.dumps(obj).encode("utf-8")
    return _INT.pack(len(data)) + data


def send_json(sock: socket.socket, obj: object) -> None:
    """Send ``obj`` as one framed JSON message (TVM's ``sendjson``)."""
    sock.sendall(encode_json(obj))


def check_length(length: int, limit: int, where: str) -> None:
    """Raise :class:`RPCError` unless ``1 <= length <= limit``."""
    if length < 1 or length > limit:
        raise RPCError(f"{where}: declared message length {length} outside [1, {limit}]")


def decode_json(data: bytes, where: str) -> object:
    """Parse UTF-8 JSON, raising :class:`RPCError` naming ``where`` on garbage."""
    try:
        return json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as err:
        raise RPCError(f"{where}: malformed JSON message ({err})") from None


def recv_json(sock: socket.socket, limit: int = MAX_TRACKER_MESSAGE) -> object:
    """Receive one framed JSON message (TVM's ``recvjson``) of at most ``limit`` bytes.

    Raises
    ------
    RPCError
        On EOF, an oversized or empty declared length, or malformed JSON.
    """
    length = recv_int(sock)
    check_length(length, limit, f"rpc protocol ({_peer(sock)})")
    return decode_json(recv_all(sock, length), f"rpc protocol ({_peer(sock)})")


def send_frame(sock: socket.socket, header: dict, payload: bytes = b"") -> None:
    """Send one data-plane frame: a JSON header (with ``payload_len``) and raw payload bytes.

    Parameters
    ----------
    sock : socket.socket
        The session socket.
    header : dict
        JSON-serialisable header; ``payload_len`` is set here.
    payload : bytes
        Raw bytes following the header (at most :data:`MAX_PAYLOAD`).
    """
    if len(payload) > MAX_PAYLOAD:
        raise RPCError(f"rpc session: payload of {len(payload)} bytes exceeds the {MAX_PAYLOAD} limit")
    sock.sendall(encode_json(dict(header, payload_len=len(payload))) + payload)


def recv_frame(sock: socket.socket) -> tuple[dict, bytes]:
    """Receive one data-plane frame sent by :func:`send_frame`.

    Returns
    -------
    header : dict
        The JSON header.
    payload : bytes
        The raw payload (empty when none was declared).

    Raises
    ------
    RPCError
        On EOF, oversize header or payload, or a header that is not a JSON object.
    """
    where = f"rpc session ({_peer(sock)})"
    first = sock.recv(1)
    if not first:
        raise PeerClosed(f"{where}: closed by the peer")
    length = struct.unpack("<i", first + recv_all(sock, 3))[0]
    check_length(length, MAX_HEADER, where)
    header = decode_json(recv_all(sock, length), where)
    if not isinstance(header, dict):
        raise RPCError(f"{where}: frame header is not a JSON object")
    size = header.get("payload_len", 0)
    if not isinstance(size, int) or size < 0 or size > MAX_PAYLOAD:
        raise RPCError(f"{where}: payload length {size!r} outside [0, {MAX_PAYLOAD}]")
    return header, recv_all(sock, size) if size else b""


def parse_key_options(keystr: str) -> tuple[str, dict[str, str]]:
    """Split a handshake key string into its first token and its ``-name=value`` options.

    Parameters
    ----------
    keystr : str
        E.g. ``"client:rk3399:0.12 -timeout=10 -token=abc"``.

    Returns
    -------
    key : str
        The first whitespace-separated token (empty for an empty string).
    options : dict
        ``{"timeout": "10", "token": "abc"}``; tokens without ``=`` are ignored.
    """
    parts = keystr.split()
    options = {}
    for part in parts[1:]:
        name, sep, value = part.partition("=")
        if sep and name.startswith("-"):
            options[name[1:]] = value
    return (parts[0] if parts else ""), options


def _peer(sock: socket.socket) -> str:
    try:
        peer = sock.getpeername()
    except OSError:
        return "closed peer"
    if isinstance(peer, tuple) and len(peer) >= 2:
        return f"{peer[0]}:{peer[1]}"
    return "local peer"
