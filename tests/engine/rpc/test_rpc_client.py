"""The tracker client: a request for a key no server has says so while it waits."""

from __future__ import annotations

import logging
import socket
import threading

import pytest

from tunecli.engine.rpc import client
from tunecli.engine.rpc.client import connect_tracker, missing_key_hint, registered_keys
from tunecli.errors import RPCError

from .conftest import wait_for
from .test_rpc_runner import start_servers


def test_an_indefinite_request_for_a_key_no_server_has_warns_and_keeps_waiting(procs, tracker, caplog,
                                                                                monkeypatch):
    """TVM's ``request`` waits for ever; a mistyped key must not wait in silence."""
    caplog.set_level(logging.WARNING, logger="tunecli.rpc.client")
    monkeypatch.setattr(client, "NO_SERVER_WARNING_S", 0.2)
    start_servers(procs, tracker, "rk3399", 1)
    session = connect_tracker("127.0.0.1", tracker.port)
    box: dict = {}

    def request() -> None:
        try:
            box["session"] = session.request("rk3339", max_retry=1)
        except RPCError as err:
            box["error"] = err

    thread = threading.Thread(target=request, daemon=True)
    thread.start()
    wait_for(lambda: "still waiting" in caplog.text, what="the warning")
    assert thread.is_alive()  # it warns, it does not give up: a server of the key may yet come
    assert (f"still waiting for a device of key 'rk3339': the tracker 127.0.0.1:{tracker.port} has no server "
            f"of key 'rk3339' (its keys: 'rk3399'); start one with `tunecli server --tracker "
            f"127.0.0.1:{tracker.port} --key rk3339`") in caplog.text
    assert tracker.summary()["queue_info"]["rk3339"]["pending"] == 1
    session.abort()
    thread.join(10)
    assert "error" in box and caplog.text.count("still waiting") == 1


def test_a_request_for_a_registered_but_busy_key_waits_without_warning(procs, tracker, caplog, monkeypatch):
    caplog.set_level(logging.WARNING, logger="tunecli.rpc.client")
    monkeypatch.setattr(client, "NO_SERVER_WARNING_S", 0.2)
    start_servers(procs, tracker, "busy", 1)
    holder = connect_tracker("127.0.0.1", tracker.port).request("busy")
    with pytest.raises(RPCError, match="no free device of key 'busy' within the wait timeout"):
        connect_tracker("127.0.0.1", tracker.port).request("busy", wait_timeout=1.0)
    holder.close()
    assert "still waiting" not in caplog.text


@pytest.mark.parametrize(("servers", "expected"), [
    ([], "the tracker h:1 has no server of key 'k' (its keys: none)"),
    ([{"key": "server:b", "addr": ["x", 1]}, {"key": "server:a", "addr": ["x", 2]},
      {"key": "server:b", "addr": ["x", 3]}],
     "the tracker h:1 has no server of key 'k' (its keys: 'a', 'b')"),
])
def test_missing_key_hint_lists_each_registered_key_once(servers, expected):
    assert missing_key_hint("h:1", "k", registered_keys(servers)) == expected


def test_no_tracker_at_the_address_says_how_to_start_one():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # bound, not listening: connections are refused
        with pytest.raises(RPCError, match=f"cannot connect to 127.0.0.1:{port} .*: is a tracker running "
                                           rf"there\? \(`tunecli tracker --port {port}` starts one"):
            connect_tracker("127.0.0.1", port, timeout=0.3)
