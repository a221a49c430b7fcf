"""Device servers in child processes: handshake, measurement sessions, crashes, hangs, bad peers."""

from __future__ import annotations

import socket
import time

import pytest

from tests.engine.kernels_ir import ARG_SPECS, CRASH, HANG, VADD, VSUB, compile_ir, vadd_expected
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
)
from tunecli.engine.rpc.server import Server
from tunecli.engine.rpc.session import MeasureRequest
from tunecli.errors import RPCError

from .conftest import free_servers, wait_for
from .test_rpc_tracker import assert_closed


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


def test_a_port_of_the_other_kind_is_named_as_such(lone_server, tracker):
    """A tracker's port given to ``connect``, a server's to ``connect_tracker``, or a key the
    server does not take: one error saying what the port is not and what to give instead."""
    with pytest.raises(RPCError, match=f"127.0.0.1:{tracker.port}: is not TVM RPC server: it closed the "
                                       r"connection at the server handshake \(a tracker's port\? ask the "
                                       r"tracker for a device: connect_tracker"):
        connect("127.0.0.1", tracker.port, "dev")
    with pytest.raises(RPCError, match=f"127.0.0.1:{lone_server.port} is not RPC Tracker: it closed the "
                                       r"connection at the tracker handshake \(a device server's port\?"):
        connect_tracker("127.0.0.1", lone_server.port)
    with pytest.raises(RPCError, match=r"matches key other \(a server registered with a tracker takes only "
                                       r"the keys that tracker hands out: .*request\('other'\)"):
        connect("127.0.0.1", lone_server.port, "other")
    with connect("127.0.0.1", lone_server.port, "dev") as session:  # both still serve
        assert session.measure(vadd_request()).error_no == 0
    assert tracker.summary()["server_info"] == []


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
