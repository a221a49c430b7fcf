"""A device server in a child process against idle, half-open, crowding and hostile connections."""

from __future__ import annotations

import json
import socket
import threading

import pytest

from tests.engine.kernels_ir import VADD
from tunecli.engine.measure.result import MeasureErrorNo
from tunecli.engine.rpc.client import connect
from tunecli.engine.rpc.protocol import (
    RPC_CODE_MISMATCH,
    RPC_CODE_SUCCESS,
    RPC_MAGIC,
    pack_int,
    recv_all,
    recv_frame,
    recv_int,
)
from tunecli.engine.rpc.remote import RemoteSession
from tunecli.engine.rpc.rpc_runner import RPCRunner

from .conftest import free_servers, wait_for
from .test_rpc_connections import closed_within
from .test_rpc_runner import built, inputs
from .test_rpc_server import vadd_request

SERVER_CODE = """
import json, sys
from tunecli.engine.rpc.connections import ConnectionLimits
from tunecli.engine.rpc.server import run_server
tracker = None if sys.argv[1] == "-" else ("127.0.0.1", int(sys.argv[1]))
run_server(tracker, sys.argv[2], host="127.0.0.1", port=0, port_end=0, token="", ping_period=0.3,
           unmatch_timeout=1.0, retry_period=0.3, limits=ConnectionLimits(**json.loads(sys.argv[3])),
           on_ready=lambda host, port: print(port, flush=True))
"""


def start_server(procs, key: str, tracker_port: int | None = None, **limits: float):
    port = "-" if tracker_port is None else str(tracker_port)
    return procs.child(SERVER_CODE, [port, key, json.dumps(limits)])


def hello(key: str) -> bytes:
    """TVM's client handshake for ``key``."""
    data = f"client:{key}".encode()
    return pack_int(RPC_MAGIC) + pack_int(len(data)) + data


def open_idle(port: int, count: int) -> list[socket.socket]:
    """``count`` connections that stop at every stage of the handshake: nothing, the magic, half a key."""
    stages = [b"", pack_int(RPC_MAGIC), pack_int(RPC_MAGIC) + pack_int(40) + b"client:"]
    socks = []
    for i in range(count):
        sock = socket.create_connection(("127.0.0.1", port), timeout=5)
        sock.sendall(stages[i % len(stages)])
        socks.append(sock)
    return socks


def test_idle_connections_do_not_slow_a_tune(procs, tracker):
    """Ten idle sockets stay open for a minute each; an 8-config RPC batch is measured meanwhile."""
    server = start_server(procs, "busy", tracker.port, timeout=60.0, per_peer=16, total=64)
    wait_for(lambda: free_servers(tracker, "busy") == 1, what="server registered")
    idle = open_idle(server.port, 10)
    try:
        runner = RPCRunner("busy", "127.0.0.1", tracker.port, timeout=5, number=1, repeat=1,
                           cooldown_interval=0)
        box = {}
        thread = threading.Thread(target=lambda: box.setdefault("res", runner.run(
            inputs(8), [built(VADD, "vadd") for _ in range(8)])))
        thread.start()
        thread.join(40)              # one 60 s handshake wait in the way would exceed this
        assert not thread.is_alive(), "the batch waited for idle connections"
        assert [r.error_no for r in box["res"]] == [MeasureErrorNo.NO_ERROR] * 8
        assert not any(closed_within(sock, 0.05) for sock in idle)   # they were open all along
    finally:
        for sock in idle:
            sock.close()


def test_silent_and_half_open_connections_are_closed_after_the_timeout(procs):
    server = start_server(procs, "dev", timeout=0.5)
    idle = open_idle(server.port, 3)
    assert all(closed_within(sock, 10.0) for sock in idle)
    with connect("127.0.0.1", server.port, "dev") as session:
        assert session.measure(vadd_request()).error_no == 0


def test_per_peer_cap_refuses_the_next_connection_while_the_others_work(procs):
    server = start_server(procs, "dev", timeout=60.0, per_peer=3, total=64)
    first, *others = open_idle(server.port, 3)               # the first one has sent nothing yet
    refused = socket.create_connection(("127.0.0.1", server.port), timeout=5)
    assert closed_within(refused, 5.0)                       # at once, not after the 60 s timeout
    first.sendall(hello("dev"))
    assert recv_int(first) == RPC_CODE_SUCCESS and recv_all(first, recv_int(first)) == b"server:dev"
    session = RemoteSession(first, "server:dev", ("127.0.0.1", server.port))
    assert session.measure(vadd_request()).error_no == 0
    session.close()
    assert not any(closed_within(sock, 0.05) for sock in others)
    for sock in others:
        sock.close()
    with connect("127.0.0.1", server.port, "dev") as again:
        assert again.measure(vadd_request()).error_no == 0


def session_frame(header: bytes, payload: bytes = b"") -> bytes:
    return pack_int(len(header)) + header + payload


#: Each sends bytes to a fresh connection and expects it closed without taking the server down.
HOSTILE_HANDSHAKES = {
    "http request": b"GET / HTTP/1.1\r\nHost: x\r\n\r\n",
    "tracker magic": pack_int(0x2F271),
    "negative key length": pack_int(RPC_MAGIC) + pack_int(-1),
    "oversized key length": pack_int(RPC_MAGIC) + pack_int(1 << 30),
    "key length larger than the key": pack_int(RPC_MAGIC) + pack_int(100) + b"client:dev",
    "magic only": pack_int(RPC_MAGIC),
    "half a magic": pack_int(RPC_MAGIC)[:2],
}
#: Each is refused with RPC_CODE_MISMATCH.
MISMATCHED_KEYS = {
    "wrong key": b"client:other",
    "empty key": b"",
    "blank key": b"   ",
    "no client prefix": b"dev",
    "not utf-8": b"client:\xff\xfedev",
    "key as option": b"-key=client:dev",
    "tracker-style key": b"server:dev",
}
#: Each follows a successful handshake; the server answers an error frame or closes.
HOSTILE_FRAMES = {
    "oversized frame": pack_int(1 << 30),
    "negative frame length": pack_int(-7),
    "not json": session_frame(b"{[}\xff"),
    "array header": session_frame(b'["measure"]'),
    "unknown op": session_frame(b'{"op": "exec", "cmd": "rm -rf /"}'),
    "negative payload": session_frame(b'{"op": "measure", "payload_len": -1}'),
    "oversized payload": session_frame(b'{"op": "measure", "payload_len": 1073741824}'),
    "measure without request": session_frame(b'{"op": "measure", "payload_len": 0}'),
    "measure with garbage request": session_frame(
        b'{"op": "measure", "request": {"entry_name": 5, "arg_specs": "x"}, "payload_len": 3}', b"abc"),
    "half a frame": pack_int(50) + b'{"op": ',
}


def test_hostile_handshakes_and_frames_close_only_their_connection(procs):
    server = start_server(procs, "dev", timeout=1.0, per_peer=64, total=64)
    outcomes = {}
    for name, data in HOSTILE_HANDSHAKES.items():
        sock = socket.create_connection(("127.0.0.1", server.port), timeout=5)
        sock.sendall(data)
        outcomes[name] = closed_within(sock, 10.0)
        sock.close()
    for name, key in MISMATCHED_KEYS.items():
        sock = socket.create_connection(("127.0.0.1", server.port), timeout=5)
        sock.sendall(pack_int(RPC_MAGIC) + pack_int(len(key)) + key)
        outcomes[name] = recv_int(sock) == RPC_CODE_MISMATCH and closed_within(sock, 10.0)
        sock.close()
    for name, data in HOSTILE_FRAMES.items():
        sock = socket.create_connection(("127.0.0.1", server.port), timeout=5)
        sock.sendall(hello("dev"))
        assert recv_int(sock) == RPC_CODE_SUCCESS and recv_all(sock, recv_int(sock)) == b"server:dev"
        sock.sendall(data)
        if name == "half a frame":
            sock.shutdown(socket.SHUT_WR)            # the peer gives up mid-frame
        sock.settimeout(10)
        try:
            header, _ = recv_frame(sock)
            replied = header.get("op") == "error"
        except Exception:  # noqa: BLE001 - closed without a reply is fine too
            replied = True
        outcomes[name] = replied and closed_within(sock, 10.0)
        sock.close()
    assert len(outcomes) == 24
    assert [name for name, ok in outcomes.items() if not ok] == []
    with connect("127.0.0.1", server.port, "dev") as session:
        assert session.measure(vadd_request()).error_no == 0


@pytest.mark.parametrize("token", ["", "guess", "s3cret-but-longer"])
def test_wrong_tokens_are_refused_like_a_wrong_key(procs, token):
    server = procs("sec", token="s3cret")
    sock = socket.create_connection(("127.0.0.1", server.port), timeout=5)
    key = b"client:sec" + (f" -token={token}".encode() if token else b"")
    sock.sendall(pack_int(RPC_MAGIC) + pack_int(len(key)) + key)
    assert recv_int(sock) == RPC_CODE_MISMATCH
    assert closed_within(sock, 5.0)
    with connect("127.0.0.1", server.port, "sec", token="s3cret") as session:
        assert session.measure(vadd_request()).error_no == 0
