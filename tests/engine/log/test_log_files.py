"""Log files as places: the lock follows the file, whole-log writes never destroy a log."""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

import pytest

from tunecli.engine.log.log_files import (
    check_log_file,
    check_output_log,
    exclusive_log,
    lock_holder,
    lock_path,
    write_log,
)
from tunecli.errors import LogInUseError, RecordError


def test_a_symlink_and_a_relative_path_lock_the_same_file(tmp_path: Path, monkeypatch) -> None:
    log = tmp_path / "real" / "tune.log"
    log.parent.mkdir()
    log.write_text("")
    link = tmp_path / "link.log"
    link.symlink_to(log)
    monkeypatch.chdir(log.parent)
    assert lock_path(link) == lock_path("tune.log") == lock_path(log) == log.with_name("tune.log.lock")
    with exclusive_log(log):
        for other in (link, "tune.log", "./../real/tune.log"):
            with pytest.raises(LogInUseError, match=f"^{other}: another tuning run \\(pid {os.getpid()}\\)"):
                with exclusive_log(other):
                    pass
        assert lock_holder(link) == f"pid {os.getpid()}"
    assert lock_holder(link) is None
    with exclusive_log(link):  # free again
        pass


def test_lock_holder_does_not_create_a_lock_file(tmp_path: Path) -> None:
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
    with open(tmp_path / "busy.log.lock", "a+") as held:
        fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
        held.write("pid 4242")
        held.flush()
        with pytest.raises(LogInUseError, match=r"busy.log: a tuning run \(pid 4242\) is writing this log"):
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
