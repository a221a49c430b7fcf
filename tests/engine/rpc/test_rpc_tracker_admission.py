"""The tracker against silent, half-open, crowding and non-reading connections (real sockets)."""

from __future__ import annotations

import json
import os
import socket
import time
from collections.abc import Iterator

import pytest

from tunecli.engine.rpc.client import connect_tracker
from tunecli.engine.rpc.connections import ConnectionLimits
from tunecli.engine.rpc.protocol import (
    MAX_TRACKER_MESSAGE,
    RPC_TRACKER_MAGIC,
    TOKEN_CODE,
    pack_int,
    recv_json,
    send_json,
)
from tunecli.engine.rpc.tracker import Tracker
from tunecli.engine.rpc.tracker_state import MAX_PER_CONNECTION, MAX_QUEUES

from .conftest import raw_tracker_conn, wait_for
from .test_rpc_connections import closed_within
from .test_rpc_tracker import call, register

TIMEOUT = 0.5


@pytest.fixture
def strict() -> Iterator[Tracker]:
    """A tracker with a short timeout and room for eight connections per peer."""
    trk = Tracker("127.0.0.1", 0, 0, token="", limits=ConnectionLimits(timeout=TIMEOUT, per_peer=8, total=64))
    yield trk
    trk.stop()


def connected(port: int, data: bytes = b"") -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port), timeout=5)
    sock.sendall(data)
    return sock


def test_silent_and_half_sent_connections_are_closed_within_the_timeout(strict):
    magic = pack_int(RPC_TRACKER_MAGIC)
    socks = {
        "nothing": connected(strict.port),
        "half a magic": connected(strict.port, magic[:2]),
        "only the magic": connected(strict.port, magic),
        "half a length": connected(strict.port, magic + pack_int(3)[:2]),
        "half a message": connected(strict.port, magic + pack_int(20) + b"[6, "),
    }
    ping = raw_tracker_conn(strict.port)
    assert call(ping, [1]) == 0                              # then silence, holding nothing
    socks["a ping, then silence"] = ping
    start = time.monotonic()
    assert [name for name, sock in socks.items() if not closed_within(sock, 10 * TIMEOUT)] == []
    assert time.monotonic() - start < 10 * TIMEOUT
    for sock in socks.values():
        sock.close()
    wait_for(lambda: strict.connection_count() == 0, what="connections released")


def test_registered_servers_and_waiting_requests_may_stay_silent(strict):
    server = register(strict.port, "k", 9001, "k:0.1")
    waiting = raw_tracker_conn(strict.port)
    send_json(waiting, [4, "other", "", 1])
    time.sleep(4 * TIMEOUT)
    assert not closed_within(server, 0.05) and not closed_within(waiting, 0.05)
    assert call(server, [7]) == ["k:0.1"]
    late = register(strict.port, "other", 9002, "other:0.1")
    assert recv_json(waiting) == [0, ["127.0.0.1", 9002, "other:0.1"]]
    for sock in (server, waiting, late):
        sock.close()


def test_per_peer_cap_refuses_the_next_connection_while_the_others_work(strict):
    held = [register(strict.port, "k", 9000 + i, f"k:0.{i}") for i in range(8)]
    refused = connected(strict.port, pack_int(RPC_TRACKER_MAGIC))
    assert closed_within(refused, 5.0)                      # no magic answered, closed at once
    assert all(call(sock, [1]) == 0 for sock in held)
    assert strict.summary()["queue_info"]["k"] == {"free": 8, "pending": 0}
    held.pop().close()
    wait_for(lambda: strict.connection_count() == 7, what="closed connection released")
    again = raw_tracker_conn(strict.port)
    assert call(again, [1]) == 0
    for sock in [*held, again]:
        sock.close()


def test_a_peer_that_never_reads_is_closed(strict):
    servers = []
    for i in range(7):                                       # big server records make big summaries
        sock = raw_tracker_conn(strict.port)
        assert call(sock, [5, {"key": "server:k", "addr": [None, 9000 + i], "pad": "x" * 180}]) == 0
        servers.append(sock)
    descriptors = len(os.listdir("/proc/self/fd"))           # the tracker runs in this process
    reader = raw_tracker_conn(strict.port)
    reader.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    try:
        reader.sendall(b"".join(pack_int(3) + b"[6]" for _ in range(20000)))   # ~35 MB of replies, unread
    except OSError:
        pass                                                 # closed by the tracker meanwhile
    wait_for(lambda: strict.connection_count() == 7, timeout=20 * TIMEOUT, what="non-reader closed")
    wait_for(lambda: len(os.listdir("/proc/self/fd")) == descriptors + 1, timeout=5,
             what="the tracker's socket closed, not left waiting to flush")   # + 1: the reader's own
    reader.close()
    assert all(call(sock, [1]) == 0 for sock in servers)
    with connect_tracker("127.0.0.1", strict.port, token="") as other:
        assert len(other.summary()["server_info"]) == 7
    for sock in servers:
        sock.close()


def test_summary_reconnects_after_the_tracker_closed_an_idle_session(strict):
    session = connect_tracker("127.0.0.1", strict.port, token="")
    assert session.summary()["server_info"] == []
    wait_for(lambda: strict.connection_count() == 0, timeout=20 * TIMEOUT, what="idle session closed")
    assert session.summary()["server_info"] == []
    session.close()


def test_token_must_come_within_the_timeout():
    trk = Tracker("127.0.0.1", 0, 0, token="s3cret", limits=ConnectionLimits(timeout=TIMEOUT))
    try:
        magic_only = raw_tracker_conn(trk.port)
        assert closed_within(magic_only, 10 * TIMEOUT)
        with connect_tracker("127.0.0.1", trk.port, token="s3cret") as session:
            assert session.summary()["server_info"] == []
        wrong = raw_tracker_conn(trk.port)
        assert call(wrong, [TOKEN_CODE, 5]) == -1             # a token that is not a string
        assert closed_within(wrong, 5.0)
    finally:
        trk.stop()


def test_a_connection_may_not_pile_up_requests_or_slots(tracker):
    client = raw_tracker_conn(tracker.port)
    for i in range(MAX_PER_CONNECTION):
        send_json(client, [4, f"k{i}", "", 1])
    assert call(client, [1]) == 0
    send_json(client, [4, "one-too-many", "", 1])
    assert closed_within(client, 5.0)
    server = raw_tracker_conn(tracker.port)
    for i in range(MAX_PER_CONNECTION):
        assert call(server, [3, "s", [9000 + i, f"s:0.{i}"]]) == 0
    send_json(server, [3, "s", [8999, "s:0.99"]])
    assert closed_within(server, 5.0)
    wait_for(lambda: tracker.summary()["queue_info"]["k0"]["pending"] == 0, what="requests dropped")


def test_queues_of_junk_keys_are_bounded_and_forgotten_first(tracker):
    clients = []
    for c in range(MAX_QUEUES // MAX_PER_CONNECTION):
        clients.append(raw_tracker_conn(tracker.port))
        for i in range(MAX_PER_CONNECTION):
            send_json(clients[-1], [4, f"junk{c}-{i}", "", 1])
        assert call(clients[-1], [1]) == 0
    late = raw_tracker_conn(tracker.port)
    send_json(late, [4, "one-key-too-many", "", 1])
    assert closed_within(late, 5.0)                          # every queue has someone waiting
    clients.pop().close()
    last = f"junk{len(clients)}-0"
    wait_for(lambda: tracker.summary()["queue_info"][last]["pending"] == 0, what="its requests dropped")
    server = register(tracker.port, "real", 9000, "real:0.1")   # empty queues make room
    queues = tracker.summary()["queue_info"]
    assert queues["real"] == {"free": 1, "pending": 0} and len(queues) <= MAX_QUEUES
    assert len(json.dumps(tracker.summary())) < MAX_TRACKER_MESSAGE
    for sock in [*clients, server]:
        sock.close()


def test_connections_are_probed_so_vanished_peers_are_dropped(strict):
    server = register(strict.port, "k", 9001, "k:0.1")
    (conn,) = list(strict._server.state.connections)
    sock = conn.writer.get_extra_info("socket")
    assert sock.getsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE) == 1
    assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPIDLE) == 60
    server.close()
