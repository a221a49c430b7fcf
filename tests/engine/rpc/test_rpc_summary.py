"""text_summary / query_tracker reproduce TVM v0.14's query_rpc_tracker layout byte for byte."""

from __future__ import annotations

from tunecli.engine.rpc.client import connect_tracker, format_summary, query_tracker
from tunecli.engine.rpc.protocol import send_json

from .conftest import raw_tracker_conn, wait_for
from .test_rpc_tracker import call

REFERENCE = {
    "queue_info": {"rk3399": {"free": 1, "pending": 0}, "rpi3b": {"free": 2, "pending": 3}},
    "server_info": [
        {"key": "server:rpi3b", "addr": ["10.0.0.5", 9091]},
        {"key": "server:rk3399", "addr": ["10.0.0.7", 9090]},
        {"key": "server:rpi3b", "addr": ["10.0.0.6", 9091]},
    ],
}

# Reference §7.6, copied from the specification (rows keep their trailing spaces).
REFERENCE_TEXT = (
    "Server List\n"
    "------------------------------\n"
    "server-address           key\n"
    "------------------------------\n"
    "        10.0.0.7:9090    server:rk3399\n"
    "        10.0.0.5:9091    server:rpi3b\n"
    "        10.0.0.6:9091    server:rpi3b\n"
    "------------------------------\n"
    "\n"
    "Queue Status\n"
    "------------------------------\n"
    "key      total  free  pending\n"
    "------------------------------\n"
    "rk3399   1      1     0      \n"
    "rpi3b    2      2     3      \n"
    "------------------------------\n"
)


def test_reference_layout():
    assert format_summary(REFERENCE) == REFERENCE_TEXT


def test_empty_tracker_layout():
    line30, line27 = "-" * 30 + "\n", "-" * 27 + "\n"
    assert format_summary({"queue_info": {}, "server_info": []}) == (
        "Server List\n" + line30 + "server-address           key\n" + line30 + line30
        + "\nQueue Status\n" + line27 + "key   total  free  pending\n" + line27 + line27)


def test_keys_without_servers_or_requests_are_hidden_and_width_follows_longest_key():
    data = {"queue_info": {"a": {"free": 0, "pending": 0}, "mate10pro": {"free": 2, "pending": 0}},
            "server_info": [{"key": "server:mate10pro", "addr": ["1.2.3.4", 1]}] * 2}
    lines = format_summary(data).splitlines()
    queue = lines[lines.index("Queue Status") + 1:]
    assert queue == ["-" * 33, "key         total  free  pending", "-" * 33,
                     "mate10pro   2      2     0      ", "-" * 33]


def test_live_query_matches_tracker_state(tracker):
    socks = []
    for addr, key, port in [("10.0.0.7", "rk3399", 9090), ("10.0.0.5", "rpi3b", 9091),
                            ("10.0.0.6", "rpi3b", 9091)]:
        sock = raw_tracker_conn(tracker.port)
        assert call(sock, [5, {"key": "server:" + key, "addr": [addr, port]}]) == 0
        assert call(sock, [3, key, [port, f"{key}:0.{len(socks) + 1}"], addr]) == 0
        socks.append(sock)
    for _ in range(3):
        waiter = raw_tracker_conn(tracker.port)
        waiter.sendall(b"")
        send_json(waiter, [4, "rpi3b", "", 1])
        socks.append(waiter)
    wait_for(lambda: tracker.summary()["queue_info"]["rpi3b"]["pending"] == 1)
    text = query_tracker("127.0.0.1", tracker.port)
    expected = REFERENCE_TEXT.replace("rpi3b    2      2     3", "rpi3b    2      0     1")
    assert text == f"Tracker address 127.0.0.1:{tracker.port}\n\n" + expected
    with connect_tracker("127.0.0.1", tracker.port) as session:
        assert session.text_summary() == expected
    for sock in socks:
        sock.close()
