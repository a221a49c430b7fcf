"""The measurement session spoken on a device server's connection after the TVM handshake.

Frames are :func:`tunecli.engine.rpc.protocol.send_frame` frames (JSON header + raw payload):

* client → server ``{"op": "measure", "request": {...}}`` with payload = object file bytes
  followed by the reference outputs (their lengths in ``request["ref_lengths"]``);
* server → client ``{"op": "result", "reply": {...}}`` with payload = the outputs returned
  when the request set ``return_outputs`` (lengths in ``reply["output_lengths"]``);
* client → server ``{"op": "describe"}``, server → client ``{"op": "device", "device": {...}}``:
  the processor the server runs kernels on (:class:`tunecli.engine.rpc.device_info.DeviceInfo`),
  asked by a runner before it measures, so a job built for another machine stops at once;
* client → server ``{"op": "close"}`` ends the session (so does closing the socket);
* server → client ``{"op": "error", "error": message}`` before closing on a bad frame.

Several measurements may go through one session, one at a time. The request and reply are
:class:`tunecli.engine.measure.timing.MeasureRequest` / ``MeasureReply``, the same records the
local runner hands to its worker; every field received from the network is validated here.
The request's :class:`TimingOptions` travel as fields of the request object, one per setting
(``number``, ``repeat``, ``min_repeat_ms``, ``timeout``, ``warmup_ms``, ...), as older tunecli
servers and clients expect; a setting a peer does not send takes its default.
"""

from __future__ import annotations

from tunecli.engine.codegen.compiled_kernel import LaunchShape
from tunecli.engine.measure.result import MeasureErrorNo
from tunecli.engine.measure.timing import MeasureReply, MeasureRequest
from tunecli.engine.measure.timing_options import TIMING_OPTIONS, TimingOptions
from tunecli.engine.rpc.device_info import DeviceInfo
from tunecli.engine.target import Target, parse_target
from tunecli.errors import RPCError, TargetError, TuneError

__all__ = ["DESCRIBE", "MeasureReply", "MeasureRequest", "decode_device", "decode_reply", "decode_request",
           "decode_timing", "encode_device", "encode_reply", "encode_request", "encode_timing",
           "wire_arg_specs"]

#: The frame header a client sends to ask for the server's :class:`DeviceInfo`.
DESCRIBE = {"op": "describe"}

ArgSpecT = tuple[tuple[int, ...], str]
_ERROR_NOS = {int(e) for e in MeasureErrorNo}


def wire_arg_specs(specs: object) -> tuple[ArgSpecT, ...]:
    """Validate argument specs received from the network: a list of ``[shape, dtype]``.

    Raises
    ------
    RPCError
        When an entry is not a list of non-negative ints and a dtype string.
    """
    if not isinstance(specs, list):
        raise RPCError(f"rpc session: arg_specs {specs!r} is not a list")
    out = []
    for spec in specs:
        if not (isinstance(spec, list) and len(spec) == 2 and isinstance(spec[0], list)
                and isinstance(spec[1], str) and all(type(d) is int and d >= 0 for d in spec[0])):
            raise RPCError(f"rpc session: argument spec {spec!r} is not [shape of ints, dtype]")
        out.append((tuple(spec[0]), spec[1]))
    return tuple(out)


def _pack_blobs(blobs: tuple[tuple[int, bytes], ...]) -> tuple[list[int], list[int], bytes]:
    """Split ``((index, bytes), ...)`` into indices, lengths and the concatenated bytes."""
    return [i for i, _ in blobs], [len(b) for _, b in blobs], b"".join(b for _, b in blobs)


def _unpack_blobs(indices: object, lengths: object, data: bytes, where: str) -> tuple[tuple[int, bytes], ...]:
    """Inverse of :func:`_pack_blobs`; the lengths must add up to ``len(data)``."""
    if not (isinstance(indices, list) and isinstance(lengths, list) and len(indices) == len(lengths)):
        raise RPCError(f"rpc session: {where} indices/lengths are not two lists of equal length")
    ints = [_int(v, where) for v in [*indices, *lengths]]
    if any(v < 0 for v in ints) or sum(lengths) != len(data):
        raise RPCError(f"rpc session: {where} lengths do not match the payload")
    out, offset = [], 0
    for index, length in zip(indices, lengths, strict=True):
        out.append((index, data[offset:offset + length]))
        offset += length
    return tuple(out)


def encode_timing(timing: TimingOptions) -> dict:
    """The wire fields of ``timing``: one JSON value per setting, by name."""
    return {opt.name: getattr(timing, opt.name) for opt in TIMING_OPTIONS}


def decode_timing(fields: dict) -> TimingOptions:
    """Rebuild :class:`TimingOptions` from wire fields; a missing setting takes its default.

    Raises
    ------
    RPCError
        When a setting has the wrong type or is out of range, naming it.
    """
    values = {}
    for opt in TIMING_OPTIONS:
        if opt.name in fields:
            problem = opt.problem(fields[opt.name])
            if problem:
                raise RPCError(f"rpc session: field {opt.name}: {problem}")
            values[opt.name] = fields[opt.name]
    try:
        return TimingOptions(**values)
    except TuneError as err:
        raise RPCError(f"rpc session: {err}") from None


def encode_request(req: MeasureRequest) -> tuple[dict, bytes]:
    """Return the frame header and payload (object bytes + reference outputs) that carry ``req``."""
    ref_indices, ref_lengths, refs = _pack_blobs(req.ref_outputs)
    meta = {
        "entry_name": req.entry_name,
        "arg_specs": [[list(shape), dtype] for shape, dtype in req.arg_specs],
        **encode_timing(req.timing),
        "seed": req.seed,
        "output_indices": list(req.output_indices),
        "rtol": req.rtol,
        "atol": req.atol,
        "return_outputs": req.return_outputs,
        "obj_len": len(req.obj),
        "ref_indices": ref_indices,
        "ref_lengths": ref_lengths,
    }
    if req.target is not None:  # a device kernel (PTX): its target and launch shape
        meta["target"] = str(req.target)
        if req.launch is not None:
            meta["launch"] = [list(req.launch.grid), list(req.launch.block)]
    return {"op": "measure", "request": meta}, req.obj + refs


def _target(value: object) -> Target:
    try:
        return parse_target(str(value))
    except TargetError as err:
        raise RPCError(f"rpc session: bad target of a measure request: {err}") from None


def _launch(value: object) -> LaunchShape:
    """A launch shape from its wire form ``[[gx, gy, gz], [bx, by, bz]]``."""
    if not (isinstance(value, list) and len(value) == 2 and all(
            isinstance(dims, list) and len(dims) == 3 and all(type(n) is int and n >= 1 for n in dims)
            for dims in value)):
        raise RPCError(f"rpc session: malformed launch shape {value!r}")
    return LaunchShape(tuple(value[0]), tuple(value[1]))


def decode_request(header: dict, payload: bytes) -> MeasureRequest:
    """Rebuild a :class:`MeasureRequest` from a received frame, validating every field.

    Raises
    ------
    RPCError
        When a field is missing, has the wrong type, or the payload lengths do not add up.
    """
    meta = header.get("request")
    if not isinstance(meta, dict):
        raise RPCError("rpc session: measure frame without a request object")
    try:
        obj_len = _int(meta["obj_len"], "obj_len")
        if not 0 <= obj_len <= len(payload):
            raise RPCError("rpc session: obj_len exceeds the payload")
        refs = _unpack_blobs(meta["ref_indices"], meta["ref_lengths"], payload[obj_len:], "ref_outputs")
        rtol, atol = meta["rtol"], meta["atol"]
        req = MeasureRequest(
            obj=payload[:obj_len],
            entry_name=str(meta["entry_name"]),
            arg_specs=wire_arg_specs(meta["arg_specs"]),
            timing=decode_timing(meta),
            seed=_int(meta["seed"], "seed"),
            output_indices=tuple(_int(i, "output_indices") for i in meta["output_indices"]),
            ref_outputs=refs,
            rtol=None if rtol is None else float(rtol),
            atol=None if atol is None else float(atol),
            return_outputs=bool(meta["return_outputs"]),
            target=None if meta.get("target") is None else _target(meta["target"]),
            launch=None if meta.get("launch") is None else _launch(meta["launch"]),
        )
    except (KeyError, TypeError, ValueError) as err:
        raise RPCError(f"rpc session: malformed measure request ({err!r})") from None
    n_args = len(req.arg_specs)
    if any(not 0 <= i < n_args for i in [*req.output_indices, *(i for i, _ in req.ref_outputs)]):
        raise RPCError("rpc session: output index outside the argument list")
    return req


def encode_reply(reply: MeasureReply) -> tuple[dict, bytes]:
    """Return the frame header and payload (returned outputs) that carry ``reply``."""
    indices, lengths, data = _pack_blobs(reply.outputs)
    body = {"costs": list(reply.costs), "error_no": int(reply.error_no), "error": reply.error,
            "run_time": reply.run_time, "output_indices": indices, "output_lengths": lengths}
    return {"op": "result", "reply": body}, data


def decode_reply(header: dict, payload: bytes = b"") -> MeasureReply:
    """Rebuild a :class:`MeasureReply` from a received frame.

    Raises
    ------
    RPCError
        When the server reported a session error or the reply is malformed.
    """
    _expect_answer(header, "result", "a result")
    data = header.get("reply")
    if not isinstance(data, dict):
        raise RPCError("rpc session: malformed measure reply (no reply object)")
    try:
        error_no = _int(data["error_no"], "error_no")
        if error_no not in _ERROR_NOS:
            raise RPCError(f"rpc session: unknown error_no {error_no}")
        return MeasureReply(
            costs=tuple(float(c) for c in data["costs"]),
            error_no=error_no,
            error=str(data.get("error", "")),
            run_time=float(data.get("run_time", 0.0)),
            outputs=_unpack_blobs(data.get("output_indices", []), data.get("output_lengths", []),
                                  payload, "outputs"),
        )
    except (KeyError, TypeError, ValueError) as err:
        raise RPCError(f"rpc session: malformed measure reply ({err!r})") from None


def encode_device(info: DeviceInfo) -> tuple[dict, bytes]:
    """The frame (header, empty payload) that answers a ``describe`` request."""
    return {"op": "device", "device": info.as_dict()}, b""


def decode_device(header: dict) -> DeviceInfo:
    """Rebuild the server's :class:`DeviceInfo` from the answer to a ``describe`` request.

    Raises
    ------
    RPCError
        When the server reported a session error or the description is malformed.
    """
    _expect_answer(header, "device", "a device description")
    return DeviceInfo.from_dict(header.get("device"))


def _int(value: object, name: str) -> int:
    if type(value) is not int:
        raise RPCError(f"rpc session: field {name} must be an integer, got {value!r}")
    return value


def _expect_answer(header: dict, op: str, what: str) -> None:
    """RPCError unless ``header`` is the server's ``op`` answer (a session error says the server's why)."""
    if header.get("op") == "error":
        raise RPCError(f"rpc session: server error: {header.get('error', '')}")
    if header.get("op") != op:
        raise RPCError(f"rpc session: unexpected frame {header.get('op')!r} instead of {what}")
