"""Log files as places: the lock follows the file, whole-log writes never destroy a log."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tunecli.engine.log.log_files import (
    check_log_file,
    check_output_log,
    exclusive_log,
    lock_holder,
    write_log,
)
from tunecli.errors import LogInUseError, LogPathError, RecordError


def test_every_name_of_a_log_takes_the_same_lock(tmp_path: Path, monkeypatch) -> None:
    """A symbolic link, a relative path and a hard link all name one file, so one lock."""
    log = tmp_path / "real" / "tune.log"
    log.parent.mkdir()
    log.write_text("")
    link = tmp_path / "link.log"
    link.symlink_to(log)
    hard = tmp_path / "hard.log"
    os.link(log, hard)
    monkeypatch.chdir(log.parent)
    with exclusive_log(log):
        for other in (link, hard, "tune.log", "./../real/tune.log"):
            with pytest.raises(LogInUseError, match=f"^{other}: another tuning run \\(pid {os.getpid()}\\)"):
                with exclusive_log(other):
                    pass
        assert lock_holder(link) == lock_holder(hard) == f"pid {os.getpid()}"
    assert lock_holder(link) is None
    with exclusive_log(hard):  # free again
        pass


def test_the_lock_is_held_across_processes_and_names_the_holder(tmp_path: Path) -> None:
    log = tmp_path / "busy.log"
    log.write_text("x\n")
    os.link(log, tmp_path / "other.log")
    holder = subprocess.Popen(
        [sys.executable, "-c", "import fcntl, sys, time; f = open(sys.argv[1]); "
         "fcntl.flock(f, fcntl.LOCK_EX); print('held', flush=True); time.sleep(60)", str(log)],
        stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline() == "held\n"
        with pytest.raises(LogInUseError, match=f"other.log: another tuning run \\(pid {holder.pid}\\)"):
            with exclusive_log(tmp_path / "other.log"):
                pass
    finally:
        holder.kill()
        holder.wait()
    with exclusive_log(tmp_path / "other.log"):
        pass


def test_no_lock_file_is_left_and_an_unused_new_log_is_removed(tmp_path: Path) -> None:
    with exclusive_log(tmp_path / "new.log"):
        assert (tmp_path / "new.log").exists()
    assert list(tmp_path.iterdir()) == []  # nothing was written: no log, no lock file
    with exclusive_log(tmp_path / "kept.log"):
        (tmp_path / "kept.log").write_text("record\n")
    (tmp_path / "old.log").write_text("")
    with exclusive_log(tmp_path / "old.log"):
        pass
    assert sorted(p.name for p in tmp_path.iterdir()) == ["kept.log", "old.log"]  # an existing log stays


def test_a_log_in_a_read_only_directory_is_a_usage_error(tmp_path: Path) -> None:
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o555)
    # root writes to a read-only directory; sysfs refuses new files to everyone
    log = ro / "x.log" if not os.access(ro, os.W_OK) else Path("/sys/tunecli-x.log")
    try:
        with pytest.raises(LogPathError, match=r"x.log: cannot create this log: Permission denied"):
            with exclusive_log(log):
                pass
    finally:
        ro.chmod(0o755)


def test_lock_holder_creates_nothing(tmp_path: Path) -> None:
    assert lock_holder(tmp_path / "x.log") is None
    assert list(tmp_path.iterdir()) == []


def test_output_that_is_an_input_by_any_name_is_refused(tmp_path: Path, monkeypatch) -> None:
    log = tmp_path / "a.log"
    log.write_text("x\n")
    link = tmp_path / "b.log"
    link.symlink_to(log)
    hard = tmp_path / "c.log"
    os.link(log, hard)
    monkeypatch.chdir(tmp_path)
    for out in (log, link, hard, "a.log", "./a.log"):
        with pytest.raises(LogInUseError, match="is the input log"):
            check_output_log(out, [str(log)])
    check_output_log(tmp_path / "new.log", [str(log)])


def test_output_locked_by_a_tune_is_refused(tmp_path: Path) -> None:
    out = tmp_path / "busy.log"
    with exclusive_log(out):
        with pytest.raises(LogInUseError, match=rf"busy.log: a tuning run \(pid {os.getpid()}\) is writing"):
            check_output_log(out, [])


def test_write_log_replaces_the_file_a_symlink_points_to_and_keeps_its_mode(tmp_path: Path) -> None:
    real = tmp_path / "real.log"
    real.write_text("old\n")
    real.chmod(0o600)
    link = tmp_path / "link.log"
    link.symlink_to(real)
    write_log(link, ["a\n", "b\n"])
    assert link.is_symlink() and real.read_text() == "a\nb\n"
    assert real.stat().st_mode & 0o777 == 0o600
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link.log", "real.log"]  # no temporary left


def test_a_failed_write_leaves_the_old_log(tmp_path: Path) -> None:
    log = tmp_path / "keep.log"
    log.write_text("precious\n")

    def lines():
        yield "new\n"
        raise RuntimeError("disk full")

    with pytest.raises(RuntimeError):
        write_log(log, lines())
    assert log.read_text() == "precious\n"
    assert [p.name for p in tmp_path.iterdir()] == ["keep.log"]


def test_check_log_file_names_what_the_path_is(tmp_path: Path) -> None:
    with pytest.raises(RecordError, match="no such log file"):
        check_log_file(tmp_path / "none.log")
    with pytest.raises(RecordError, match="is a directory, not a log file"):
        check_log_file(tmp_path)
    fifo = tmp_path / "fifo.log"
    os.mkfifo(fifo)
    with pytest.raises(RecordError, match="is not a regular file"):
        check_log_file(fifo)
    if os.geteuid() != 0:  # root reads anything
        locked = tmp_path / "locked.log"
        locked.write_text("")
        locked.chmod(0)
        with pytest.raises(RecordError, match="cannot read this log: Permission denied"):
            check_log_file(locked)


def test_log_problem_for_a_log_to_write(tmp_path: Path) -> None:
    from tunecli.engine.log.log_files import MAX_LOG_NAME, log_problem

    assert log_problem(tmp_path / "new" / "deeper" / "x.log") is None  # made when tuning starts
    blocker = tmp_path / "file"
    blocker.write_text("")
    assert log_problem(blocker / "x.log") == f"{blocker} is not a directory"
    assert log_problem(tmp_path / ("x" * (MAX_LOG_NAME + 1))) == (
        f"a file name in the path is longer than {MAX_LOG_NAME} bytes")
    assert log_problem(tmp_path) == "is a directory, not a log file"
    assert log_problem(tmp_path / "none.log", reading=True) == "no such log file"


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only files (a read-only file system "
                                              "refuses it too: checked by hand with a read-only tmpfs)")
def test_a_log_that_cannot_be_written_is_refused_before_anything_is_measured(tmp_path: Path) -> None:
    log = tmp_path / "kept.log"
    log.write_text("# records\n")
    log.chmod(0o444)
    with pytest.raises(LogPathError, match=r"kept\.log: cannot append to this log: it is not writable"):
        with exclusive_log(log):
            pytest.fail("the block ran")
    assert log.read_text() == "# records\n" and lock_holder(log) is None
