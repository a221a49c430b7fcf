"""Where ``apply`` writes its exports: checked before anything is built, written whole or not at all.

``check_export`` refuses a destination ``apply`` could not write (a read-only or virtual file
system, a file where a directory is needed or the other way round) before the job's kernels are
built or timed, so a bad ``--export`` costs nothing.  ``write_whole`` writes a file through a
temporary name beside it and renames it into place; ``ExportDirectory`` gathers a kernel job's
files in a temporary directory and moves them into the destination at the end.  A killed
``apply`` leaves no export at all (or the previous one), never a partial file or directory.
"""

from __future__ import annotations

import functools
import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

from tunecli.engine.atomic_file import replace_file, temporary_name
from tunecli.errors import JobError


def check_export(path: str, directory: bool) -> None:
    """Refuse an export destination ``apply`` cannot write.

    Parameters
    ----------
    path : str
        The export's path (a directory for a kernel job, a library file for a model job).
    directory : bool
        Whether the export is a directory.

    Raises
    ------
    JobError
        Naming the path and what is wrong with it.
    """
    target = Path(path)
    if target.is_dir() and not directory:
        raise JobError(f"{path}: is a directory; a model job exports one library file "
                       f"(e.g. {target / 'net.so'})")
    if target.exists() and directory and not target.is_dir():
        raise JobError(f"{path}: is a file; a kernel job exports a directory of kernel files")
    where = target if target.is_dir() else target.parent
    while not where.exists() and where != where.parent:
        where = where.parent
    if not where.is_dir():
        raise JobError(f"{path}: cannot write the export: {where} is not a directory")
    try:
        handle, probe = tempfile.mkstemp(dir=where, prefix=".tunecli-export-check-")
        os.close(handle)
        os.unlink(probe)
    except OSError as err:
        raise JobError(f"{path}: cannot write the export in {where}: {err.strerror}") from None


def write_whole(path: str, write: Callable[[str], None]) -> None:
    """Write the file at ``path`` with ``write(temporary path)``, then rename it into place.

    Raises
    ------
    JobError
        When the file cannot be written there (the temporary file is removed).
    """
    try:
        replace_file(path, lambda partial: write(str(partial)), suffix=Path(path).suffix)
    except OSError as err:
        raise JobError(f"{path}: cannot write the export: {err.strerror or err}") from None


class ExportDirectory:
    """A kernel job's export: files written into a temporary directory (``folder``), moved into
    the destination by ``finish`` (each file renamed into place); ``discard`` drops them."""

    def __init__(self, path: str) -> None:
        self.path = Path(path)
        self.folder = Path(tempfile.mkdtemp(prefix="tunecli_export_"))

    def final(self, name: str) -> str:
        """The path a file written as ``folder / name`` will have."""
        return str(self.path / name)

    def finish(self) -> None:
        """Move the files into the destination: a new directory appears whole, an existing one
        gets each file renamed into place.

        Raises
        ------
        JobError
            When the destination cannot be written (a full disk): one message, saying which
            files, if any, were replaced in an existing destination.
        """
        staged: Path | None = None
        replaced: list[str] = []
        try:
            if not self.path.exists():
                self.path.parent.mkdir(parents=True, exist_ok=True)
                staged = temporary_name(self.path)
                staged.mkdir()
                for file in sorted(self.folder.iterdir()):  # one file at a time: a failure is one error
                    shutil.copyfile(file, staged / file.name)
                os.replace(staged, self.path)
                staged = None
            else:
                for file in sorted(self.folder.iterdir()):
                    replace_file(self.path / file.name, functools.partial(shutil.copyfile, file))
                    replaced.append(file.name)
        except OSError as err:
            kept = f"only {', '.join(replaced)} replaced" if replaced else "nothing was exported"
            raise JobError(f"{self.path}: cannot write the export: {err.strerror or err}; {kept}") from None
        finally:
            if staged is not None:  # what a failed move left beside the destination
                shutil.rmtree(staged, ignore_errors=True)
            self.discard()

    def discard(self) -> None:
        """Remove the temporary directory."""
        shutil.rmtree(self.folder, ignore_errors=True)
