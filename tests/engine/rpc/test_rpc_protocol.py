"""Framing, limits, tokens and keys of the RPC wire protocol, and the priority scheduler."""

from __future__ import annotations

import socket
import struct

import pytest

from tunecli.engine.codegen.compiled_kernel import LaunchShape
from tunecli.engine.measure.timing_options import WARMUP_MS, TimingOptions
from tunecli.engine.rpc import protocol
from tunecli.engine.rpc.scheduler import PriorityScheduler, Resource
from tunecli.engine.rpc.session import (
    MeasureReply,
    MeasureRequest,
    decode_reply,
    decode_request,
    encode_reply,
    encode_request,
)
from tunecli.engine.target import Target
from tunecli.errors import RPCError


@pytest.fixture
def pair():
    a, b = socket.socketpair()
    a.settimeout(5)
    b.settimeout(5)
    yield a, b
    a.close()
    b.close()


def test_constants_are_tvms():
    assert protocol.RPC_MAGIC == 1045105
    assert protocol.pack_int(protocol.RPC_TRACKER_MAGIC) == bytes([0x71, 0xF2, 0x02, 0x00])
    assert protocol.RPC_CODE_MISMATCH == protocol.RPC_MAGIC + 2
    assert [int(c) for c in protocol.TrackerCode] == [-1, 0, 1, 2, 3, 4, 5, 6, 7]
    assert protocol.TOKEN_CODE not in {int(c) for c in protocol.TrackerCode}


def test_json_framing_is_little_endian_length_plus_json(pair):
    a, b = pair
    protocol.send_json(a, [4, "rk3399", "", 2])
    data = b'[4, "rk3399", "", 2]'
    assert protocol.recv_all(b, 4 + len(data)) == struct.pack("<i", len(data)) + data
    protocol.send_json(a, {"x": [1, 2]})
    assert protocol.recv_json(b) == {"x": [1, 2]}


@pytest.mark.parametrize("length", [0, -5, protocol.MAX_TRACKER_MESSAGE + 1])
def test_recv_json_rejects_bad_lengths(pair, length):
    a, b = pair
    a.sendall(protocol.pack_int(length) + b"[1]")
    with pytest.raises(RPCError, match="outside"):
        protocol.recv_json(b)


def test_recv_json_rejects_garbage_and_eof(pair):
    a, b = pair
    a.sendall(protocol.pack_int(4) + b"\xff{[}")
    with pytest.raises(RPCError, match="malformed JSON"):
        protocol.recv_json(b)
    a.sendall(protocol.pack_int(10) + b"[1")
    a.close()
    with pytest.raises(RPCError, match="connection reset"):
        protocol.recv_json(b)


def test_frames_carry_payloads_and_enforce_limits(pair):
    a, b = pair
    protocol.send_frame(a, {"op": "x"}, b"\x00\x01\x02")
    assert protocol.recv_frame(b) == ({"op": "x", "payload_len": 3}, b"\x00\x01\x02")
    header = b'{"op": "x", "payload_len": 16777217}'
    a.sendall(protocol.pack_int(len(header)) + header)
    with pytest.raises(RPCError, match="payload length"):
        protocol.recv_frame(b)
    with pytest.raises(RPCError, match="exceeds"):
        protocol.send_frame(a, {}, bytes(protocol.MAX_PAYLOAD + 1))


def test_tokens_compare_exactly(monkeypatch):
    assert protocol.token_matches(None, "anything")
    assert protocol.token_matches("s3cret", "s3cret")
    assert not protocol.token_matches("s3cret", "s3cre")
    assert not protocol.token_matches("s3cret", None)
    assert not protocol.token_matches("s3cret", 5)
    monkeypatch.setenv(protocol.TOKEN_ENV, "fromenv")
    assert protocol.resolve_token(None) == "fromenv"
    assert protocol.resolve_token("") is None
    assert protocol.resolve_token("x") == "x"
    with pytest.raises(RPCError, match="whitespace"):
        protocol.resolve_token("two words")


def test_match_keys_and_key_options():
    key = protocol.random_key("127.0.0.1:5555")
    assert protocol.split_random_key(key) == "127.0.0.1:5555"
    assert float(key.rsplit(":", 1)[1]) < 1.0
    assert protocol.parse_key_options("client:rk:0.5 -timeout=10 -token=a=b junk") == (
        "client:rk:0.5", {"timeout": "10", "token": "a=b"})
    assert protocol.parse_key_options("") == ("", {})


def test_measure_request_roundtrip_and_validation():
    timing = TimingOptions(number=2, warmup_ms=12.5, cooldown_interval=0.5, check_correctness=True)
    req = MeasureRequest(b"OBJ", "k", (((4,), "float32"), ((2, 2), "int8")), timing, seed=9,
                         output_indices=(1,), ref_outputs=((1, b"abcd"),), atol=0.5, return_outputs=True)
    header, payload = encode_request(req)
    assert decode_request(header, payload) == req
    old_client = dict(header, request={k: v for k, v in header["request"].items() if k != "warmup_ms"})
    assert decode_request(old_client, payload).timing.warmup_ms == WARMUP_MS  # a client without the field
    with pytest.raises(RPCError, match="do not match the payload"):
        decode_request(header, payload + b"x")
    bad_specs = dict(header, request=dict(header["request"], arg_specs=[[[4], 7]]))
    with pytest.raises(RPCError, match="argument spec"):
        decode_request(bad_specs, payload)
    bad_index = dict(header, request=dict(header["request"], output_indices=[5]))
    with pytest.raises(RPCError, match="outside the argument list"):
        decode_request(bad_index, payload)
    for name, bad in (("number", "many"), ("number", 0), ("warmup_ms", -1), ("timeout", 0)):
        wrong = dict(header, request=dict(header["request"], **{name: bad}))
        with pytest.raises(RPCError, match=f"field {name}: expected"):  # checked, not clamped
            decode_request(wrong, payload)


def test_a_gpu_kernels_request_carries_its_target_and_launch_shape():
    req = MeasureRequest(b".entry k", "k", (((4,), "float32"),), target=Target("cuda -arch=sm_90"),
                         launch=LaunchShape((8, 1, 1), (128, 2, 1)))
    header, payload = encode_request(req)
    assert header["request"]["target"] == "cuda -arch=sm_90"
    assert decode_request(header, payload) == req
    cpu = MeasureRequest(b"OBJ", "k", (((4,), "float32"),))
    assert "target" not in encode_request(cpu)[0]["request"]  # what older servers read
    for field, bad, match in (("launch", [[8, 1], [1, 1, 1]], "malformed launch shape"),
                              ("launch", [[0, 1, 1], [1, 1, 1]], "malformed launch shape"),
                              ("target", "-arch=sm_90", "bad target")):
        wrong = dict(header, request=dict(header["request"], **{field: bad}))
        with pytest.raises(RPCError, match=match):
            decode_request(wrong, payload)


def test_measure_reply_roundtrip_and_errors():
    reply = MeasureReply((1e-6, 2e-6), 0, "", 0.25, ((2, b"\x00" * 8),))
    assert decode_reply(*encode_reply(reply)) == reply
    with pytest.raises(RPCError, match="server error: boom"):
        decode_reply({"op": "error", "error": "boom"})
    with pytest.raises(RPCError, match="unknown error_no"):
        decode_reply({"op": "result", "reply": {"costs": [], "error_no": 42}})


def _resource(name: str) -> Resource:
    return Resource(None, "k", "127.0.0.1", 1, name)


def test_scheduler_serves_highest_priority_first_then_fifo():
    sched = PriorityScheduler("k")
    served = []
    for name, prio in [("low", 1), ("high1", 5), ("mid", 3), ("high2", 5)]:
        sched.request(name, prio, lambda value, name=name: served.append((name, value.matchkey)) or True)
    assert sched.summary() == {"free": 0, "pending": 4}
    for i in range(4):
        sched.put(_resource(f"r{i}"))
    assert served == [("high1", "r0"), ("high2", "r1"), ("mid", "r2"), ("low", "r3")]
    assert sched.summary() == {"free": 0, "pending": 0}


def test_scheduler_returns_resource_when_requester_is_gone():
    sched = PriorityScheduler("k")
    got = []
    sched.request("gone", 9, lambda value: False)
    sched.request("alive", 1, lambda value: got.append(value.matchkey) or True)
    sched.put(_resource("r0"))
    assert got == ["r0"]
    sched.request("late", 1, lambda value: got.append(value.matchkey) or True)
    assert got == ["r0"]
    sched.put(_resource("r1"))
    assert got == ["r0", "r1"]
    sched.request("owner", 1, lambda value: True)
    sched.drop_requests("owner")
    assert sched.summary() == {"free": 0, "pending": 0}
