"""Device servers in child processes: handshake, measurement sessions, crashes, hangs, bad peers."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time

import pytest
from conftest import free_servers, wait_for
from kernels_ir import ARG_SPECS, CRASH, HANG, VADD, VSUB, compile_ir, vadd_expected
from test_rpc_tracker import assert_closed

from tunecli.engine.measure.timing_options import TimingOptions
from tunecli.engine.rpc.client import connect, connect_tracker
from tunecli.engine.rpc.protocol import (
    MAX_HEADER,
    RPC_CODE_SUCCESS,
    RPC_MAGIC,
    pack_int,
    recv_all,
    recv_frame,
    recv_int,
    recv_json,
    send_json,
)
from tunecli.engine.rpc.server import Server
from tunecli.engine.rpc.session import MeasureRequest
from tunecli.engine.rpc.tracker import Tracker
from tunecli.errors import RPCError


def vadd_request(**kw) -> MeasureRequest:
    return MeasureRequest(compile_ir(VADD), "vadd", ARG_SPECS, **kw)


@pytest.fixture
def lone_server(procs):
    """A server without tracker, device key "dev"."""
    return procs("dev")


def test_measure_crash_hang_and_wrong_answer_in_one_session(lone_server):
    with connect("127.0.0.1", lone_server.port, "dev") as session:
        assert session.remote_key == "server:dev"
        ok = session.measure(vadd_request(timing=TimingOptions(number=3, repeat=4), seed=5,
                                          ref_outputs=((2, vadd_expected(5)),)))
        assert ok.error_no == 0 and len(ok.costs) == 4 and all(0 < c < 1e-3 for c in ok.costs)
        crash = session.measure(MeasureRequest(compile_ir(CRASH), "crash", ARG_SPECS))
        assert (crash.error_no, crash.costs) == (4, ())
        assert "SIGSEGV" in crash.error
        start = time.monotonic()
        hang = session.measure(MeasureRequest(compile_ir(HANG), "hang", ARG_SPECS,
                                              TimingOptions(timeout=0.3)))
        assert hang.error_no == 7 and time.monotonic() - start < 5
        wrong = session.measure(MeasureRequest(compile_ir(VSUB), "vsub", ARG_SPECS, seed=5,
                                               ref_outputs=((2, vadd_expected(5)),)))
        assert wrong.error_no == 5
        missing = session.measure(MeasureRequest(compile_ir(VADD), "nosuch", ARG_SPECS))
        assert missing.error_no == 4 and "nosuch" in missing.error
        assert session.measure(vadd_request()).error_no == 0     # the worker was replaced
    with connect("127.0.0.1", lone_server.port, "dev") as again:     # server free again
        assert again.measure(vadd_request()).error_no == 0


def test_handshake_refuses_wrong_key_and_garbage(lone_server):
    with pytest.raises(RPCError, match="cannot find server that matches key"):
        connect("127.0.0.1", lone_server.port, "other")
    for garbage in [b"GET / HTTP/1.1\r\n\r\n", pack_int(RPC_MAGIC) + pack_int(MAX_HEADER + 1)]:
        sock = socket.create_connection(("127.0.0.1", lone_server.port), timeout=5)
        sock.sendall(garbage)
        assert_closed(sock)
        sock.close()
    raw = socket.create_connection(("127.0.0.1", lone_server.port), timeout=5)
    key = b"client:dev"
    raw.sendall(pack_int(RPC_MAGIC) + pack_int(len(key)) + key)      # exactly TVM's client handshake
    assert recv_int(raw) == RPC_CODE_SUCCESS
    assert recv_all(raw, recv_int(raw)) == b"server:dev"
    raw.sendall(pack_int(1 << 30))                                   # oversized session frame
    header, _ = recv_frame(raw)
    assert header["op"] == "error" and "outside" in header["error"]
    assert_closed(raw)
    raw.close()
    with connect("127.0.0.1", lone_server.port, "dev") as session:
        assert session.measure(vadd_request()).error_no == 0


def test_session_timeout_expires(lone_server):
    session = connect("127.0.0.1", lone_server.port, "dev", session_timeout=0.5)
    assert session.measure(vadd_request()).error_no == 0
    time.sleep(0.7)
    with pytest.raises(RPCError, match="session has expired"):
        session.measure(vadd_request())
    with connect("127.0.0.1", lone_server.port, "dev") as again:
        assert again.measure(vadd_request()).error_no == 0


def test_server_token(procs):
    server = procs("sec", token="s3cret")
    with pytest.raises(RPCError, match="matches key"):
        connect("127.0.0.1", server.port, "sec", token="")
    with pytest.raises(RPCError, match="matches key"):
        connect("127.0.0.1", server.port, "sec", token="guess")
    with connect("127.0.0.1", server.port, "sec", token="s3cret") as session:
        assert session.measure(vadd_request()).error_no == 0


@pytest.mark.parametrize("token,message", [("wrong", "token refused"), ("", "requires a token")])
def test_server_with_a_bad_token_stops_with_a_clear_error(token, message):
    """A refused token is a setup mistake: the server says why and exits instead of retrying forever."""
    trk = Tracker("127.0.0.1", 0, 0, token="tk")
    try:
        code = ("import sys\nfrom tunecli.engine.rpc.server import run_server\n"
                "run_server(('127.0.0.1', int(sys.argv[1])), 'k', host='127.0.0.1', port=0, port_end=0, "
                "token=sys.argv[2], retry_period=0.2)")
        out = subprocess.run([sys.executable, "-c", code, str(trk.port), token], capture_output=True,
                             text=True, timeout=60, env={**os.environ, "TUNECLI_RPC_TOKEN": ""})
        assert out.returncode != 0
        assert message in out.stderr.splitlines()[-1]
        assert trk.summary() == {"queue_info": {}, "server_info": []}
    finally:
        trk.stop()


def test_registration_rekey_and_reconnection(procs, tracker):
    server = procs("pi", tracker_port=tracker.port)
    wait_for(lambda: free_servers(tracker, "pi") == 1, what="server registered")
    info = tracker.summary()["server_info"]
    assert info == [{"key": "server:pi", "addr": ["127.0.0.1", server.port]}]
    # a request that is matched but never used: the server re-PUTs a new key after unmatch_timeout
    with connect_tracker("127.0.0.1", tracker.port) as waiting:
        send_json(waiting._sock, [4, "pi", "", 1])
        stale = recv_json(waiting._sock)[1][2]
    wait_for(lambda: free_servers(tracker, "pi") == 1, timeout=10, what="re-registration")
    with pytest.raises(RPCError, match="matches key"):
        connect("127.0.0.1", server.port, stale)
    with connect_tracker("127.0.0.1", tracker.port) as client:
        session = client.request("pi", session_timeout=5)
        assert session.measure(vadd_request()).error_no == 0
        assert free_servers(tracker, "pi") == 0
        session.close()
    wait_for(lambda: free_servers(tracker, "pi") == 1, what="free again after the session")


def test_server_reconnects_to_a_restarted_tracker(procs):
    first = Tracker("127.0.0.1", 0, 0, token="")
    port = first.port
    procs("pi", tracker_port=port)
    wait_for(lambda: free_servers(first, "pi") == 1, what="server registered")
    first.stop()
    second = Tracker("127.0.0.1", port, port + 1, token="")
    try:
        wait_for(lambda: free_servers(second, "pi") == 1, what="server re-registered")
    finally:
        second.stop()


def test_in_process_server_serves_and_leaves_on_stop(tracker):
    server = Server("127.0.0.1", 0, 0, key="inproc", tracker_addr=("127.0.0.1", tracker.port), token="",
                    ping_period=0.3).start()
    try:
        wait_for(lambda: free_servers(tracker, "inproc") == 1, what="in-process server registered")
        with connect_tracker("127.0.0.1", tracker.port) as client:
            with client.request("inproc") as session:
                assert session.measure(vadd_request()).error_no == 0
        wait_for(lambda: free_servers(tracker, "inproc") == 1, what="free again")
    finally:
        server.stop()
    assert server.sessions_served == 1
    wait_for(lambda: tracker.summary()["server_info"] == [], what="stopped server left the tracker")
