"""TVM's remote session API on a tunecli session (``RPCSession``'s methods): files, libraries,
devices (see :mod:`.session_ops` for the frames, :mod:`.remote_objects` for what they return)."""

from __future__ import annotations

import os
from typing import NoReturn

from tunecli.engine.rpc.remote_objects import DEVICE_TYPES, RemoteDevice, RemoteKernelModule, RemoteModule
from tunecli.engine.target import Target
from tunecli.errors import ArgumentError

#: Bytes of an uploaded file sent per frame.
UPLOAD_CHUNK = 8 << 20


class RemoteAPI:
    """The remote session API, over ``self.exchange(header, payload) -> (header, payload)``."""

    def exchange(self, header: dict, payload: bytes = b"") -> tuple[dict, bytes]:
        raise NotImplementedError

    def object_call(self, op: str, fields: dict, payload: bytes = b"") -> tuple[dict, bytes]:
        """Run one operation on the server's remote objects (see :mod:`.remote_worker`)."""
        return self.exchange({"op": op, "fields": fields}, payload)

    def upload(self, data: str | os.PathLike | bytes | bytearray, target: str | None = None) -> None:
        """Copy a file (a path, or bytes named by ``target``) into the session's directory on the
        server, as ``target`` (default: the file's base name)."""
        if isinstance(data, (bytes, bytearray)):
            if not target:
                raise ArgumentError("remote upload: give the remote name (target=...) of uploaded bytes")
            blob = bytes(data)
        else:
            path = os.fspath(data)
            if not os.path.isfile(path):
                raise ArgumentError(f"remote upload: no such file {path!r}")
            with open(path, "rb") as f:
                blob = f.read()
            target = target or os.path.basename(path)
        offset = 0
        while True:
            chunk = blob[offset:offset + UPLOAD_CHUNK]
            self.exchange({"op": "upload", "name": target, "offset": offset, "total": len(blob)}, chunk)
            offset += len(chunk)
            if offset >= len(blob):
                return

    def download(self, path: str) -> bytes:
        """The content of a file of the session's directory."""
        return self.exchange({"op": "download", "name": path})[1]

    def remove(self, path: str) -> None:
        """Delete a file (or directory) of the session's directory."""
        self.exchange({"op": "remove", "name": path})

    def listdir(self, path: str = ".") -> list[str]:
        """The names in a directory of the session's directory."""
        return list(self.exchange({"op": "listdir", "name": path})[0]["names"])

    def load_module(self, path: str) -> RemoteModule | RemoteKernelModule:
        """Load an uploaded library (``.so`` or ``.tar``: a network's, or a kernel module's) on the
        server; a library for another machine is refused with one error (the session goes on)."""
        reply, _ = self.exchange({"op": "load_module", "name": path, "fields": {}})
        if reply.get("kind") == "kernel":
            return RemoteKernelModule(self, reply["handle"], path, str(reply["entry_name"]),
                                      len(reply["arg_specs"]), reply.get("target"))
        return RemoteModule(self, reply["handle"], path, reply.get("libmod_name", "default"),
                            reply.get("target"))

    def device(self, dev_type: str | int | Target, dev_id: int = 0) -> RemoteDevice:
        """A device of the server: a DLPack type, ``"cpu"``/``"cuda"``, or a target (``str(target)``)."""
        if isinstance(dev_type, int):
            return RemoteDevice(self, dev_type, dev_id)
        name = str(dev_type).split()[0] if str(dev_type).strip() else ""
        if name not in DEVICE_TYPES:
            raise ArgumentError(f"remote device: unknown device {dev_type!r} (cpu, cuda, or a target)")
        return RemoteDevice(self, DEVICE_TYPES[name], dev_id)

    def cpu(self, dev_id: int = 0) -> RemoteDevice:
        """The server's CPU."""
        return RemoteDevice(self, RemoteDevice.kDLCPU, dev_id)

    def cuda(self, dev_id: int = 0) -> RemoteDevice:
        """A CUDA GPU of the server."""
        return RemoteDevice(self, RemoteDevice.kDLCUDA, dev_id)

    gpu = cuda

    def get_function(self, name: str) -> NoReturn:
        raise ArgumentError(f"remote session: no remote function {name!r}: tunecli's server runs libraries "
                            "(remote.load_module) and measurements only")
