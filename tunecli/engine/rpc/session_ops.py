"""The server side of TVM's remote session API: files, libraries, graph modules and arrays.

Besides measurement, a session answers these frames (client → server, each answered by
``{"op": "ok", ...}`` with a payload, or by ``{"op": "failed", "error": message}`` after which
the session goes on):

* ``upload`` (``name``, ``offset``, ``total``; payload: the chunk), ``download`` / ``remove`` /
  ``listdir`` (``name``): the session's own directory (:mod:`.session_files`), removed when the
  session ends;
* ``load_module`` (``name``: an uploaded ``.so`` or ``.tar``) and the object operations of
  :mod:`.remote_worker` (``create``, ``set_input``, ``run``, ``entry``, ``time``, ``module_call``,
  ``module_time``, ``array_new``, ``array_get``, ``array_set``, ``free``; their ``fields``), run in
  the server's worker process.

A library is checked against the server's processor (:meth:`DeviceInfo.mismatch`) as it is loaded.
A worker that dies or hangs on a call ends the session with an ``error`` frame (the server
replaces the worker and serves the next client).
"""

from __future__ import annotations

import time

from tunecli.engine.measure.worker import CallStatus, Worker
from tunecli.engine.rpc.device_info import DeviceInfo
from tunecli.engine.rpc.protocol import MAX_PAYLOAD
from tunecli.engine.rpc.remote_worker import HANDLE_FUNC, WORKER_OPS
from tunecli.engine.rpc.session_files import SessionFiles, SessionRefusal
from tunecli.errors import RPCError

FILE_OPS = frozenset({"upload", "download", "remove", "listdir"})
#: Every op of the remote session API (what :class:`SessionOps` answers).
REMOTE_OPS = FILE_OPS | WORKER_OPS
#: Seconds one call may run in the worker when the session has no time limit (a network timed
#: many times on a slow board); a client waits as long (``remote.CALL_TIMEOUT``).
CALL_LIMIT = 3600.0


class SessionOps:
    """One session's files and remote objects.

    Parameters
    ----------
    worker : Worker
        The server's worker process, where libraries are loaded and run.
    device : DeviceInfo
        The server's processor (libraries for another are refused).
    max_upload : int
        Bytes the session's directory may hold.
    """

    def __init__(self, worker: Worker, device: DeviceInfo, max_upload: int) -> None:
        self.worker = worker
        self.device = device
        self.files = SessionFiles(max_upload)
        self.used_worker = False

    def handle(self, header: dict, payload: bytes, deadline: float | None) -> tuple[dict, bytes]:
        """Answer one frame; a call in the worker may run until the session's ``deadline``
        (``time.monotonic()``; at least a second), or :data:`CALL_LIMIT` seconds without one.

        Raises
        ------
        SessionRefusal
            When the request is refused (the session goes on).
        RPCError
            When the worker died or hung (the session ends).
        """
        timeout = CALL_LIMIT if deadline is None else max(1.0, deadline - time.monotonic())
        op = header.get("op")
        name = header.get("name")
        if op == "upload":
            self.files.write_chunk(name, header.get("offset"), header.get("total"), payload)
            return {"op": "ok"}, b""
        if op == "download":
            return {"op": "ok"}, self.files.read(name, MAX_PAYLOAD)
        if op == "remove":
            self.files.remove(name)
            return {"op": "ok"}, b""
        if op == "listdir":
            return {"op": "ok", "names": self.files.listdir(name or ".")}, b""
        fields = header.get("fields")
        if not isinstance(fields, dict):
            raise SessionRefusal(f"remote {op}: the request has no fields object")
        if op == "load_module":
            fields = {"path": self.files.existing(name)}
        result, data = self._call(str(op), fields, payload, timeout)
        if op == "load_module" and result.get("target"):
            problem = self.device.mismatch(result["target"])
            if problem:
                self._call("free", {"handle": result["handle"]}, b"", timeout)
                raise SessionRefusal(f"load_module({name!r}): the library is for another machine: {problem}")
        return {"op": "ok", **result}, data

    def _call(self, op: str, fields: dict, payload: bytes, timeout: float) -> tuple[dict, bytes]:
        self.used_worker = True
        outcome = self.worker.call(HANDLE_FUNC, (op, fields, payload), timeout)
        if outcome.status is CallStatus.OK:
            result, data = outcome.value
            if "error" in result:
                raise SessionRefusal(f"remote {op}: {result['error']}")
            return result, data
        if outcome.status is CallStatus.RAISED:
            last = outcome.detail.strip().splitlines()[-1] if outcome.detail.strip() else "no detail"
            raise SessionRefusal(f"remote {op} failed on {self.device.describe()}: {last}")
        what = f"ran past its time limit of {timeout:g} s" if outcome.status is CallStatus.TIMEOUT else "died"
        raise RPCError(f"the worker of {self.device.describe()} {what} in remote {op} ({outcome.detail}); "
                       "the session's libraries and arrays are gone: connect again")

    def close(self) -> None:
        """Remove the session's directory (the server replaces a worker the session used)."""
        self.files.close()
