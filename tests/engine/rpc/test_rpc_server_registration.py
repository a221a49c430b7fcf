"""A device server's registration with a tracker: UPDATE_INFO and PUT, a fresh match key when a
handed-out one stays unused, reconnection to a restarted tracker, a refused token."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tunecli.engine.rpc.client import connect, connect_tracker
from tunecli.engine.rpc.protocol import recv_json, send_json
from tunecli.engine.rpc.server import Server
from tunecli.engine.rpc.tracker import Tracker
from tunecli.errors import RPCError

from .conftest import free_servers, wait_for
from .test_rpc_server import vadd_request


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


def test_the_server_says_when_the_tracker_has_taken_it_and_took_it_again():
    """``on_registered`` (what ``tunecli server`` prints): once the tracker lists the server, so a
    client may ask for it from then on, and again after the tracker came back."""
    trackers = [Tracker("127.0.0.1", 0, 0, token="")]
    port, seen = trackers[0].port, []
    server = Server("127.0.0.1", 0, 0, key="pi", tracker_addr=("127.0.0.1", port), token="", ping_period=0.2,
                    retry_period=0.2,
                    on_registered=lambda again: seen.append((again, free_servers(trackers[-1], "pi"))))
    server.start()
    try:
        wait_for(lambda: seen == [(False, 1)], what="the first registration")
        trackers[0].stop()
        trackers.append(Tracker("127.0.0.1", port, port + 1, token=""))
        wait_for(lambda: len(seen) == 2, what="the registration with the restarted tracker")
        assert seen[1] == (True, 1)
    finally:
        server.stop()
        trackers[-1].stop()
