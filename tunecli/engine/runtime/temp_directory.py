"""TVM's ``contrib.utils.tempdir``: a temporary directory for a build's files, removed when done."""

from __future__ import annotations

import os
import shutil
import tempfile


class TempDirectory:
    """A new temporary directory (removed by :meth:`remove`, at the end of a ``with`` block, or when
    the object is collected, unless kept for debugging).

    Parameters
    ----------
    custom_path : str, optional
        Use (and create) this directory instead of a new one; it is never removed.
    keep_for_debug : bool, optional
        Keep the directory afterwards.
    """

    def __init__(self, custom_path: str | None = None, keep_for_debug: bool | None = None) -> None:
        if custom_path:
            os.makedirs(custom_path, exist_ok=True)
            self.temp_dir = os.path.abspath(custom_path)
        else:
            self.temp_dir = tempfile.mkdtemp(prefix="tunecli_")
        self._owned = not custom_path and not keep_for_debug

    @property
    def path(self) -> str:
        """The directory."""
        return self.temp_dir

    def relpath(self, name: str) -> str:
        """The path of ``name`` inside the directory."""
        return os.path.join(self.temp_dir, name)

    def listdir(self) -> list[str]:
        """The names in the directory, sorted."""
        return sorted(os.listdir(self.temp_dir))

    def remove(self) -> None:
        """Remove the directory and what it holds (a kept or custom one stays)."""
        if self._owned and self.temp_dir:
            shutil.rmtree(self.temp_dir, ignore_errors=True)
            self._owned = False

    def __enter__(self) -> TempDirectory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.remove()

    def __del__(self) -> None:
        self.remove()


def tempdir(custom_path: str | None = None, keep_for_debug: bool | None = None) -> TempDirectory:
    """A new :class:`TempDirectory` (TVM's ``tvm.contrib.utils.tempdir``)."""
    return TempDirectory(custom_path, keep_for_debug)
