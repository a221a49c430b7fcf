"""The tracker speaks TVM's protocol to raw TVM-style clients, survives bad ones, checks tokens."""

from __future__ import annotations

import socket

import pytest

from tunecli.engine.rpc.client import connect_tracker, query_tracker
from tunecli.engine.rpc.protocol import (
    MAX_TRACKER_MESSAGE,
    RPC_MAGIC,
    TOKEN_CODE,
    pack_int,
    recv_json,
    send_json,
)
from tunecli.engine.rpc.tracker import Tracker
from tunecli.errors import RPCError

from .conftest import raw_tracker_conn, wait_for


def framed(data: bytes) -> bytes:
    return pack_int(len(data)) + data


def call(sock: socket.socket, msg: list) -> object:
    send_json(sock, msg)
    return recv_json(sock)


def register(port: int, key: str, server_port: int, matchkey: str, info: bool = True) -> socket.socket:
    """Act as TVM's server: UPDATE_INFO (optional) then PUT."""
    sock = raw_tracker_conn(port)
    if info:
        assert call(sock, [5, {"key": "server:" + key, "addr": [None, server_port]}]) == 0
    assert call(sock, [3, key, [server_port, matchkey], None]) == 0
    return sock


def assert_closed(sock: socket.socket) -> None:
    sock.settimeout(5)
    try:
        assert sock.recv(1) == b""
    except ConnectionResetError:
        pass


def test_ping_put_request_summary_pending(tracker):
    server = register(tracker.port, "rk3399", 9090, "rk3399:0.25")
    assert call(server, [1]) == 0
    assert call(server, [7]) == ["rk3399:0.25"]
    client = raw_tracker_conn(tracker.port)
    assert call(client, [6]) == [0, {
        "queue_info": {"rk3399": {"free": 1, "pending": 0}},
        "server_info": [{"key": "server:rk3399", "addr": ["127.0.0.1", 9090]}]}]
    assert call(client, [4, "rk3399", "", 1]) == [0, ["127.0.0.1", 9090, "rk3399:0.25"]]
    assert call(server, [7]) == []
    assert call(client, [6])[1]["queue_info"] == {"rk3399": {"free": 0, "pending": 0}}
    server.close()
    client.close()


def test_request_is_deferred_until_a_server_is_put(tracker):
    client = raw_tracker_conn(tracker.port)
    send_json(client, [4, "pi", "", 1])
    wait_for(lambda: tracker.summary()["queue_info"].get("pi") == {"free": 0, "pending": 1})
    client.settimeout(0.2)
    with pytest.raises(TimeoutError):
        client.recv(1)
    client.settimeout(5)
    server = register(tracker.port, "pi", 9091, "pi:0.5")
    assert recv_json(client) == [0, ["127.0.0.1", 9091, "pi:0.5"]]
    server.close()
    client.close()


def test_waiting_requests_served_by_priority_then_arrival(tracker):
    clients = {}
    for name, prio in [("a1", 1), ("b5", 5), ("c1", 1), ("d5", 5)]:
        clients[name] = raw_tracker_conn(tracker.port)
        send_json(clients[name], [4, "k", "", prio])
        count = len(clients)
        wait_for(lambda: tracker.summary()["queue_info"].get("k", {}).get("pending") == count)  # noqa: B023
    servers = [register(tracker.port, "k", 9000 + i, f"k:0.{i + 1}") for i in range(4)]
    got = {name: recv_json(sock)[1][2] for name, sock in clients.items()}
    assert got == {"b5": "k:0.1", "d5": "k:0.2", "a1": "k:0.3", "c1": "k:0.4"}
    for sock in [*clients.values(), *servers]:
        sock.close()


def test_server_leaves_pool_on_disconnect_only_after_update_info(tracker):
    with_info = register(tracker.port, "k", 9001, "k:0.1", info=True)
    without_info = register(tracker.port, "k", 9002, "k:0.2", info=False)
    wait_for(lambda: tracker.summary()["queue_info"]["k"]["free"] == 2)
    with_info.close()
    without_info.close()
    wait_for(lambda: tracker.summary()["server_info"] == [], what="connections forgotten")
    assert tracker.summary()["queue_info"]["k"] == {"free": 1, "pending": 0}
    client = raw_tracker_conn(tracker.port)
    assert call(client, [4, "k", "", 1]) == [0, ["127.0.0.1", 9002, "k:0.2"]]
    client.close()


def test_requests_of_a_closed_client_are_dropped(tracker):
    client = raw_tracker_conn(tracker.port)
    send_json(client, [4, "k", "", 1])
    wait_for(lambda: tracker.summary()["queue_info"].get("k", {}).get("pending") == 1)
    client.close()
    wait_for(lambda: tracker.summary()["queue_info"]["k"]["pending"] == 0)


@pytest.mark.parametrize("garbage", [
    pack_int(RPC_MAGIC),                                   # data-plane magic at the tracker
    b"GET / HTTP/1.1\r\n\r\n",                             # not a magic at all
    b"\x16\x03\x01\x00\xa5\x01\x00\x00",                         # a TLS ClientHello
    pack_int(0),                                           # a zero magic
])
def test_bad_magic_is_closed_and_tracker_keeps_serving(tracker, garbage):
    sock = socket.create_connection(("127.0.0.1", tracker.port), timeout=5)
    sock.sendall(garbage)
    assert_closed(sock)
    assert connect_tracker("127.0.0.1", tracker.port).summary()["server_info"] == []


@pytest.mark.parametrize("message", [
    pack_int(MAX_TRACKER_MESSAGE + 1) + b"[1]",            # oversized declared length
    pack_int(0),                                           # empty message
    framed(b"{[}\xff!"),                                  # not JSON
    framed(b'{"a": 1}'),                                   # not an array
    framed(b"[99]"),                                       # unknown code
    framed(b'[3, "k"]'),                                   # malformed PUT
    framed(b'[5, {"key": "server:k", "addr": 7}]'),        # malformed UPDATE_INFO
    pack_int(-1) + b"[1]",                                 # negative declared length
    framed(b'["\xff\xfe"]'),                               # not UTF-8
    framed(b"[]"),                                         # no code
    framed(b'["1"]'),                                      # code is a string
    framed(b"[1.0]"),                                      # code is a float
    framed(b"[true]"),                                     # code is a bool
    framed(b"[null]"),                                     # code is null
    framed(b"[NaN]"),                                      # code is NaN
    framed(b"[" + b"7" * 5000 + b"]"),                     # an integer too long to parse
    framed(b"[" * 30000 + b"]" * 30000),                   # nesting too deep to parse
    framed(b"[-1]"),                                       # FAIL is no request
    framed(b'[3, "k", ["9090", "k:0.1"], null]'),          # PUT with a string port
    framed(b'[3, "k", [70000, "k:0.1"], null]'),           # PUT with a port out of range
    framed(b'[3, "k", [9090, "k:0.1"], 5]'),               # PUT with a numeric address
    framed(b'[3, "' + b"k" * 300 + b'", [9090, "k:0.1"]]'),  # PUT with an overlong key
    framed(b'[4, "k"]'),                                   # short REQUEST
    framed(b'[4, "k", "", "high"]'),                       # REQUEST with a string priority
    framed(b"[5, []]"),                                    # UPDATE_INFO that is no object
    framed(b'[5, {"key": 5}]'),                            # UPDATE_INFO with a numeric key
    framed(b'[5, {"key": "server:k", "addr": [null, "p"]}]'),  # UPDATE_INFO with a string port
    framed(b'[5, {"key": "server:k", "pad": "' + b"x" * 2000 + b'"}]'),  # oversized UPDATE_INFO
])
def test_bad_messages_close_the_connection_only(tracker, message):
    sock = raw_tracker_conn(tracker.port)
    sock.sendall(message)
    assert_closed(sock)
    other = raw_tracker_conn(tracker.port)
    assert call(other, [1]) == 0
    other.close()
    assert tracker.summary() == {"queue_info": {}, "server_info": []}    # nothing of it was kept


def test_stop_needs_the_stop_key():
    trk = Tracker("127.0.0.1", 0, 0, token="")
    sock = raw_tracker_conn(trk.port)
    assert call(sock, [2, "wrong"]) == -1
    assert call(sock, [2, trk.stop_key]) == 0
    trk._thread.join(5)
    assert not trk._thread.is_alive()
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", trk.port), timeout=2).recv(1)
    trk.stop()


def test_token_required_by_tracker():
    trk = Tracker("127.0.0.1", 0, 0, token="s3cret")
    try:
        plain = raw_tracker_conn(trk.port)                 # a TVM client knows no token
        assert call(plain, [6]) == -1
        assert_closed(plain)
        wrong = raw_tracker_conn(trk.port)
        assert call(wrong, [TOKEN_CODE, "guess"]) == -1
        assert_closed(wrong)
        with pytest.raises(RPCError, match="token refused"):
            connect_tracker("127.0.0.1", trk.port, token="guess")
        with pytest.raises(RPCError, match="requires a token: give one to the client, or set TUNECLI_RPC"):
            connect_tracker("127.0.0.1", trk.port, token="").summary()
        session = connect_tracker("127.0.0.1", trk.port, token="s3cret")
        assert session.summary() == {"queue_info": {}, "server_info": []}
        session.close()
    finally:
        trk.stop()


def test_token_sent_to_tracker_without_token_is_accepted(tracker):
    with connect_tracker("127.0.0.1", tracker.port, token="extra") as session:
        assert session.summary()["server_info"] == []


def test_run_tracker_in_a_child_process(procs):
    proc = procs.tracker(token="tk")
    text = query_tracker("127.0.0.1", proc.port, token="tk")
    assert text.startswith(f"Tracker address 127.0.0.1:{proc.port}\n\nServer List\n")
    with pytest.raises(RPCError):
        query_tracker("127.0.0.1", proc.port, token="wrong")
