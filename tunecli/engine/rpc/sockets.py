"""TCP socket helpers of the tracker, the device servers and their clients: ``HOST:PORT``
addresses, binding the first free port of a range, closing a socket when a block fails and
breaking a blocked socket from another thread."""

from __future__ import annotations

import contextlib
import socket
from collections.abc import Iterator

from tunecli.errors import RPCError


def parse_host_port(text: str, default_port: int | None = None) -> tuple[str, int]:
    """Split ``"HOST:PORT"`` (or ``"HOST"`` when ``default_port`` is given) into its parts.

    Parameters
    ----------
    text : str
        The address; the port is what follows the last ``:``.
    default_port : int, optional
        Port used when the text has none; None: the port is required.

    Returns
    -------
    tuple of (str, int)

    Raises
    ------
    ValueError
        When the host is empty, the port is missing (and has no default) or is not an integer
        in 1..65535.
    """
    host, sep, port = text.strip().rpartition(":")
    if not sep and default_port is not None:
        host, port = port, str(default_port)
    if not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"expected HOST:PORT (e.g. 127.0.0.1:9190), got {text!r}")
    return host, int(port)


def bind_first_free(host: str, port: int, port_end: int) -> socket.socket:
    """Bind a listening TCP socket to the first free port in ``[port, port_end)``.

    Parameters
    ----------
    host : str
        Address to bind.
    port, port_end : int
        Port range; ``port_end <= port`` tries ``port`` only; port 0 lets the OS choose.

    Returns
    -------
    socket.socket
        A listening socket.

    Raises
    ------
    RPCError
        When no port in the range can be bound.
    """
    for candidate in range(port, max(port_end, port + 1)):
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, candidate))
        except OSError:
            sock.close()
            continue
        sock.listen(128)
        return sock
    raise RPCError(f"rpc bind: cannot bind to any port in [{port}, {port_end}) on {host}")


@contextlib.contextmanager
def closing_on_failure(sock: socket.socket, where: str) -> Iterator[None]:
    """Close ``sock`` when the block fails with OSError or RPCError, raised as RPCError naming ``where``."""
    try:
        yield
    except RPCError:
        sock.close()
        raise
    except OSError as err:
        sock.close()
        raise RPCError(f"{where}: {err}") from None


def shutdown_socket(sock: socket.socket | None) -> None:
    """Break ``sock`` from another thread, so that a call blocked on it raises (None: nothing)."""
    if sock is not None:
        try:
            sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
