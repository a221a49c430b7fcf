"""apply's export destination: refused before anything is built, written whole or not at all."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tunecli.engine.job.export_path import ExportDirectory, check_export, write_whole
from tunecli.errors import JobError


def test_a_destination_that_cannot_be_written_is_refused_naming_it(tmp_path: Path) -> None:
    with pytest.raises(JobError, match=r"^/proc/x/net\.so: cannot write the export in /proc"):
        check_export("/proc/x/net.so", directory=False)
    with pytest.raises(JobError, match=r"^/proc/x: cannot write the export in /proc"):
        check_export("/proc/x", directory=True)
    blocker = tmp_path / "file"
    blocker.write_text("")
    with pytest.raises(JobError, match=r"file/out: cannot write the export: .*file is not a directory"):
        check_export(str(blocker / "out"), directory=True)
    with pytest.raises(JobError, match=r"is a file; a kernel job exports a directory of kernel files"):
        check_export(str(blocker), directory=True)
    with pytest.raises(JobError, match=r"is a directory; a model job exports one library file"):
        check_export(str(tmp_path), directory=False)


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only directories")
def test_a_read_only_directory_is_refused(tmp_path: Path) -> None:
    tmp_path.chmod(0o555)
    try:
        with pytest.raises(JobError, match="cannot write the export in"):
            check_export(str(tmp_path / "new" / "net.so"), directory=False)
    finally:
        tmp_path.chmod(0o755)


def test_a_good_destination_is_accepted_and_nothing_is_left_by_the_check(tmp_path: Path) -> None:
    check_export(str(tmp_path / "a" / "b" / "net.so"), directory=False)
    check_export(str(tmp_path / "kernels"), directory=True)
    assert list(tmp_path.iterdir()) == []  # no directory made, no probe file left


def test_a_file_is_renamed_into_place_only_when_written_whole(tmp_path: Path) -> None:
    target = tmp_path / "out" / "net.so"

    def fails(partial: str) -> None:
        Path(partial).write_bytes(b"half")
        raise OSError(28, "No space left on device")

    with pytest.raises(JobError, match="net.so: cannot write the export: No space left on device"):
        write_whole(str(target), fails)
    assert list((tmp_path / "out").iterdir()) == []  # neither the file nor its partial copy
    write_whole(str(target), lambda partial: Path(partial).write_bytes(b"whole"))
    assert target.read_bytes() == b"whole" and [p.name for p in target.parent.iterdir()] == ["net.so"]


def test_an_export_directory_appears_whole_at_the_end(tmp_path: Path) -> None:
    export = ExportDirectory(str(tmp_path / "kernels"))
    (export.folder / "k.o").write_bytes(b"o")
    (export.folder / "k.s").write_text("s")
    assert export.final("k.o") == str(tmp_path / "kernels" / "k.o")
    assert not (tmp_path / "kernels").exists()  # nothing there while apply runs
    export.finish()
    assert sorted(p.name for p in (tmp_path / "kernels").iterdir()) == ["k.o", "k.s"]
    assert not export.folder.exists() and [p.name for p in tmp_path.iterdir()] == ["kernels"]

    again = ExportDirectory(str(tmp_path / "kernels"))  # into an existing directory: file by file
    (again.folder / "k.o").write_bytes(b"new")
    again.finish()
    assert (tmp_path / "kernels" / "k.o").read_bytes() == b"new"
    assert sorted(p.name for p in (tmp_path / "kernels").iterdir()) == ["k.o", "k.s"]


def test_a_discarded_export_leaves_nothing(tmp_path: Path) -> None:
    export = ExportDirectory(str(tmp_path / "kernels"))
    (export.folder / "k.o").write_bytes(b"o")
    export.discard()
    assert not export.folder.exists() and not (tmp_path / "kernels").exists()


FULL_DISK = """
import resource, sys
from pathlib import Path
from tunecli.engine.job.export_path import ExportDirectory
from tunecli.errors import JobError

out = Path(sys.argv[1])
export = ExportDirectory(str(out / "kernels"))
for name in ("a.ll", "b.o", "c.s"):
    (export.folder / name).write_bytes(b"x" * 4096)
resource.setrlimit(resource.RLIMIT_FSIZE, (1024, 1024))  # no file over 1 KiB: as a full disk
try:
    export.finish()
except JobError as err:
    print(err)
print(sorted(p.name for p in out.iterdir()), export.folder.exists())
"""


def test_a_full_disk_is_one_error_and_leaves_no_export(tmp_path: Path) -> None:
    """A write that fails at the end (a full disk; here a file-size limit) is one message naming
    the destination and the reason, with nothing exported and nothing left beside it."""
    out = tmp_path / "out"
    out.mkdir()
    run = subprocess.run([sys.executable, "-c", FULL_DISK, str(out)], capture_output=True, text=True,
                         timeout=60)
    assert run.returncode == 0, run.stderr
    message, left = run.stdout.splitlines()
    assert message == f"{out / 'kernels'}: cannot write the export: File too large; nothing was exported"
    assert left == "[] False"
