"""The files a remote session uploads: one private directory per session, removed when it ends.

Names are relative paths inside the directory (``net.tar``, ``lib/net.so``); an absolute name, a
``..`` component or anything resolving outside the directory is refused, and so is an upload
that would make the directory hold more than the server's limit.  Uploads arrive in chunks, in
order (:meth:`SessionFiles.write_chunk`).
"""

from __future__ import annotations

import os
import shutil
import tempfile

from tunecli.errors import RPCError

#: Bytes a session's directory may hold by default (every upload together).
DEFAULT_MAX_UPLOAD = 1 << 30


class SessionRefusal(RPCError):
    """A refused request (a bad file name, an upload over the limit, a library for another machine): the
    client gets one error and the session goes on."""


class SessionFiles:
    """The per-session directory of a device server.

    Parameters
    ----------
    max_bytes : int
        What the directory may hold in all.
    """

    def __init__(self, max_bytes: int = DEFAULT_MAX_UPLOAD) -> None:
        self.max_bytes = max_bytes
        self.root = os.path.realpath(tempfile.mkdtemp(prefix="tunecli_rpc_session_"))
        self._sizes: dict[str, int] = {}

    def path(self, name: object) -> str:
        """The absolute path of ``name`` inside the directory.

        Raises
        ------
        SessionRefusal
            When ``name`` is not a relative path that stays inside the directory.
        """
        if not isinstance(name, str) or not name or "\0" in name:
            raise SessionRefusal(f"remote file name {name!r} is not a non-empty string")
        if os.path.isabs(name) or ".." in name.replace("\\", "/").split("/"):
            raise SessionRefusal(f"remote file {name!r} escapes the session's directory: give a relative "
                                   "path without '..'")
        full = os.path.realpath(os.path.join(self.root, name))
        if os.path.commonpath([full, self.root]) != self.root or full == self.root:
            raise SessionRefusal(f"remote file {name!r} escapes the session's directory")
        return full

    def write_chunk(self, name: object, offset: object, total: object, data: bytes) -> None:
        """Write ``data`` at ``offset`` of the ``total``-byte upload ``name`` (offset 0 starts it anew).

        Raises
        ------
        SessionRefusal
            For a bad name, chunks out of order, or a total over the directory's limit.
        """
        full = self.path(name)
        if type(offset) is not int or type(total) is not int or offset < 0 or total < 0:
            raise SessionRefusal(f"upload of {name!r}: offset and total must be non-negative integers")
        held = sum(size for path, size in self._sizes.items() if path != full)
        if held + total > self.max_bytes:
            raise SessionRefusal(
                f"upload of {name!r}: {total} bytes would exceed the server's limit of {self.max_bytes} "
                f"bytes per session ({held} already uploaded)")
        if offset == 0:
            os.makedirs(os.path.dirname(full), exist_ok=True)
            with open(full, "wb"):
                pass
            self._sizes[full] = total
        elif self._sizes.get(full) != total or os.path.getsize(full) != offset:
            raise SessionRefusal(f"upload of {name!r}: chunk at offset {offset} out of order")
        if offset + len(data) > total:
            raise SessionRefusal(f"upload of {name!r}: more than the announced {total} bytes")
        with open(full, "ab") as f:
            f.write(data)

    def read(self, name: object, limit: int) -> bytes:
        """The content of ``name`` (at most ``limit`` bytes)."""
        full = self.existing(name)
        size = os.path.getsize(full)
        if size > limit:
            raise SessionRefusal(f"download of {name!r}: {size} bytes exceed the limit of {limit}")
        with open(full, "rb") as f:
            return f.read()

    def existing(self, name: object) -> str:
        """The path of the uploaded file ``name`` (SessionRefusal when there is none)."""
        full = self.path(name)
        if not os.path.isfile(full):
            raise SessionRefusal(f"remote file {name!r} does not exist (upload it first)")
        return full

    def remove(self, name: object) -> None:
        """Delete ``name`` (a file or a directory)."""
        full = self.path(name)
        if os.path.isdir(full):
            shutil.rmtree(full)
        elif os.path.exists(full):
            os.remove(full)
        else:
            raise SessionRefusal(f"remote file {name!r} does not exist")
        self._sizes = {p: s for p, s in self._sizes.items() if os.path.exists(p)}

    def listdir(self, name: object = ".") -> list[str]:
        """The names in the directory ``name`` ("." is the session's own)."""
        full = self.root if name in (".", "") else self.path(name)
        if not os.path.isdir(full):
            raise SessionRefusal(f"remote directory {name!r} does not exist")
        return sorted(os.listdir(full))

    def close(self) -> None:
        """Remove the directory and everything in it."""
        shutil.rmtree(self.root, ignore_errors=True)
