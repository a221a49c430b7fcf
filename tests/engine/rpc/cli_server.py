"""A ``tunecli server`` started as a user starts it (the command, in a child process), for tests
that drive TVM's remote session API against it."""

from __future__ import annotations

import contextlib
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

TUNECLI = Path(sys.executable).parent / "tunecli"


def free_port() -> int:
    """A loopback port nothing listens on now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextlib.contextmanager
def cli_server(key: str) -> Iterator[int]:
    """``tunecli server --key KEY`` without tracker on 127.0.0.1 (clients connect with the key);
    yields its port, and stops it on exit."""
    port = free_port()
    proc = subprocess.Popen([str(TUNECLI), "server", "--key", key, "--port", str(port),
                             "--port-end", str(port + 1)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            stdin=subprocess.DEVNULL, text=True)
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == f"server {key!r} listening on 127.0.0.1:{port}"
        yield port
    finally:
        proc.terminate()
        proc.communicate(timeout=10)
