"""Connection admission on real loopback sockets: handshakes read concurrently under a deadline, caps."""

from __future__ import annotations

import select
import socket
import time
from collections.abc import Iterator

import pytest

from tunecli.engine.rpc.connections import (
    ConnectionLimits,
    HandshakeGate,
    PeerLimiter,
    exposure_warnings,
    is_loopback,
    recv_before,
)
from tunecli.engine.rpc.sockets import bind_first_free
from tunecli.errors import RPCError

HELLO = b"hello"


def read_hello(conn: socket.socket, deadline: float) -> bytes | None:
    """A handshake of five bytes: ``hello`` is accepted, anything else refused with ``N``."""
    data = recv_before(conn, len(HELLO), deadline)
    if data != HELLO:
        conn.sendall(b"N")
        return None
    return data


class Gate:
    """A started gate on a loopback port, and the client sockets a test opened."""

    def __init__(self, limits: ConnectionLimits) -> None:
        self.listen = bind_first_free("127.0.0.1", 0, 0)
        self.port = self.listen.getsockname()[1]
        self.gate = HandshakeGate(self.listen, read_hello, limits, name="test-gate").start()
        self.clients: list[socket.socket] = []

    def connect(self, data: bytes = b"") -> socket.socket:
        sock = socket.create_connection(("127.0.0.1", self.port), timeout=5)
        sock.sendall(data)
        self.clients.append(sock)
        return sock

    def wait_ready(self, timeout: float = 5.0) -> tuple | None:
        """Pop the next accepted connection, waiting up to ``timeout`` for one."""
        if not select.select([self.gate], [], [], timeout)[0]:
            return None
        return self.gate.pop()

    def close(self) -> None:
        for sock in self.clients:
            sock.close()
        self.gate.close()
        self.listen.close()


@pytest.fixture
def make_gate() -> Iterator:
    gates: list[Gate] = []

    def make(**limits: float) -> Gate:
        gates.append(Gate(ConnectionLimits(**limits)))
        return gates[-1]

    yield make
    for gate in gates:
        gate.close()


def closed_within(sock: socket.socket, seconds: float) -> bool:
    """True when the peer closes ``sock`` within ``seconds`` (what it sent before is skipped)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        sock.settimeout(max(0.01, deadline - time.monotonic()))
        try:
            if sock.recv(4096) == b"":
                return True
        except TimeoutError:
            return False
        except ConnectionResetError:
            return True
    return False


def test_silent_connections_do_not_delay_a_complete_handshake(make_gate):
    gate = make_gate(timeout=60.0, per_peer=20, total=20)
    silent = [gate.connect() for _ in range(5)] + [gate.connect(HELLO[:2]) for _ in range(5)]
    client = gate.connect(HELLO)
    conn, addr, hello = gate.wait_ready(timeout=10.0)       # long before any silent one times out
    assert hello == HELLO and addr[0] == "127.0.0.1"
    conn.sendall(b"welcome")
    assert client.recv(7) == b"welcome"
    conn.close()
    assert not any(closed_within(sock, 0.05) for sock in silent)   # still waiting, not refused


def test_deadline_closes_silent_and_trickling_connections(make_gate):
    gate = make_gate(timeout=0.5)
    silent = gate.connect()
    trickling = gate.connect(b"h")
    start = time.monotonic()
    for byte in b"ell":                                      # one byte every 0.3 s: alive, never done
        time.sleep(0.3)
        try:
            trickling.sendall(bytes([byte]))
        except OSError:
            break
    assert closed_within(silent, 5.0) and closed_within(trickling, 5.0)
    assert time.monotonic() - start < 5.0
    assert gate.gate.pop() is None
    gate.connect(HELLO)                                      # the counts were released
    assert gate.wait_ready()[2] == HELLO


def test_per_peer_cap_refuses_the_next_connection_only(make_gate):
    gate = make_gate(timeout=60.0, per_peer=3, total=10)
    first, *others = [gate.connect() for _ in range(3)]
    time.sleep(0.2)                                          # let the gate accept them
    refused = gate.connect()
    assert closed_within(refused, 5.0)                       # at once, not after the 60 s timeout
    first.sendall(HELLO)
    conn, _, hello = gate.wait_ready()
    assert hello == HELLO
    conn.close()
    assert not any(closed_within(sock, 0.05) for sock in others)
    late = gate.connect(HELLO)                               # the popped one freed a place
    assert gate.wait_ready()[2] == HELLO
    assert not closed_within(late, 0.05)


def test_total_cap_counts_every_peer(make_gate):
    gate = make_gate(timeout=60.0, per_peer=10, total=2)
    kept = [gate.connect(), gate.connect()]
    time.sleep(0.2)
    assert closed_within(gate.connect(), 5.0)
    kept[0].sendall(HELLO)
    assert gate.wait_ready()[2] == HELLO


def test_refused_and_vanished_handshakes_leave_nothing_behind(make_gate):
    gate = make_gate(timeout=60.0, per_peer=2, total=2)
    for _ in range(5):                                       # more than the cap, one after another
        wrong = gate.connect(b"HELLO")
        assert wrong.recv(1) == b"N" and closed_within(wrong, 5.0)
    gone = gate.connect(HELLO)
    gone.close()
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and select.select([gate.gate], [], [], 0.1)[0]:
        assert gate.gate.pop() is None                       # a peer that left is not handed out
    gate.connect(HELLO)
    gate.connect(HELLO)
    assert gate.wait_ready()[2] == HELLO and gate.wait_ready()[2] == HELLO


def test_peer_limiter_counts_per_address_and_in_all():
    peers = PeerLimiter(ConnectionLimits(timeout=1.0, per_peer=2, total=3))
    assert peers.admit("a") and peers.admit("a") and not peers.admit("a")
    assert peers.admit("b") and not peers.admit("c")
    peers.release("a")
    assert peers.admit("c") and peers.total() == 3


@pytest.mark.parametrize("limits", [dict(timeout=0), dict(per_peer=0), dict(total=0), dict(timeout=-1)])
def test_limits_are_checked(limits):
    with pytest.raises(RPCError, match="connection limits"):
        ConnectionLimits(**limits)


def test_exposure_warnings_name_what_a_reachable_service_allows():
    assert is_loopback("127.0.0.1") and is_loopback("localhost") and not is_loopback("0.0.0.0")
    assert exposure_warnings("server", "127.0.0.1", None) == []
    assert exposure_warnings("server", "0.0.0.0", "tok") == []
    (open_server,) = exposure_warnings("server", "0.0.0.0", None)
    assert "no token" in open_server and "run native code on this machine" in open_server
    (open_tracker,) = exposure_warnings("tracker", "0.0.0.0", None)
    assert "register devices and take them" in open_tracker
    assert exposure_warnings("server", "127.0.0.1", None, ("localhost", 9190)) == []
    (unreachable,) = exposure_warnings("server", "127.0.0.1", "tok", ("192.0.2.1", 9190))
    assert "192.0.2.1:9190" in unreachable and "bind 0.0.0.0 (with a token)" in unreachable
