"""The address of a Ray cluster's head, and whether a Ray head answers there.

``HOST:PORT`` names the head's GCS port (``ray start --head --port``), ``ray://HOST:PORT`` its
client server's, ``auto`` the cluster of this machine.
"""

from __future__ import annotations

import socket

from tunecli.engine.rpc.sockets import parse_host_port

#: Seconds to open a TCP connection to the head before calling it unreachable.
CONNECT_TIMEOUT = 10.0
#: The port of a ``ray://`` address without one (Ray's client server).
CLIENT_PORT = 10001
#: The start of an HTTP/2 connection, the client's preface and an empty SETTINGS frame: a Ray
#: head's GCS and client server speak gRPC and answer it with their own SETTINGS frame.
HTTP2_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + bytes([0, 0, 0, 4, 0, 0, 0, 0, 0])


def check_address(text: str) -> str:
    """Return ``text`` if it is a cluster address: ``auto``, ``ray://HOST[:PORT]`` or ``HOST:PORT``.

    Raises
    ------
    ValueError
        Saying which forms are accepted.
    """
    try:
        head_of(text)
    except ValueError:
        raise ValueError(f"expected auto, ray://HOST:10001 or HOST:6379 (the head's GCS port), "
                         f"got {text!r}") from None
    return text


def head_of(address: str) -> tuple[str, int] | None:
    """``(host, port)`` of the head an address names (None for ``auto``: the cluster of this machine)."""
    if address == "auto":
        return None
    if address.startswith("ray://"):
        return parse_host_port(address[len("ray://"):], CLIENT_PORT)
    return parse_host_port(address)


def head_reachable(head: tuple[str, int], timeout: float = CONNECT_TIMEOUT) -> str:
    """"" when a TCP connection to ``head`` opens, else why not."""
    try:
        socket.create_connection(head, timeout=timeout).close()
    except OSError as err:
        return err.strerror or str(err)
    return ""


def head_silent(head: tuple[str, int], timeout: float = CONNECT_TIMEOUT) -> bool:
    """True when ``head`` accepts a connection but sends nothing back within ``timeout`` to the start
    of a gRPC connection: no Ray head listens there (Ray's join would wait for it without end)."""
    try:
        with socket.create_connection(head, timeout=timeout) as sock:
            sock.settimeout(timeout)
            sock.sendall(HTTP2_PREFACE)
            sock.recv(1)
    except TimeoutError:
        return True
    except OSError:  # refused, reset or closed: Ray's join reports it
        return False
    return False


#: Which port an address names (for the errors of an address where no Ray head answers).
PORT_HINT = ("HOST:PORT is the head's GCS port (`ray start --head --port`, 6379 by default); "
             "ray://HOST:PORT is its client server's (10001 by default)")
