"""A hostile user's logs: every command reads what it can, names each bad place, loses nothing.

Kinds tried (each against ``best``, ``inspect``, ``apply`` and a resuming ``tune``): an empty log,
comments only, binary garbage, a torn last line, JSON that is not a record (null, a list, a
string, a huge number, nesting 100 000 deep), a line of 2 MiB, NUL bytes, UTF-16, CRLF line ends;
and as places: a directory, a FIFO, a missing file, a log under a file.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import time
from pathlib import Path

import pytest

from .conftest import TUNECLI, Invoke


def _good_lines(matmul_log: Path) -> list[str]:
    return matmul_log.read_text().splitlines()


def _hostile_logs(matmul_log: Path) -> dict[str, tuple[bytes, int]]:
    """name -> (file contents, how many records a reader must find)."""
    good = _good_lines(matmul_log)
    rng = random.Random(0)
    garbage = bytes(rng.randrange(256) for _ in range(4096))
    return {
        "empty": (b"", 0),
        "comments only": (b"# nothing here\n\n   \n# still nothing\n", 0),
        "binary garbage": (garbage, 0),
        "good then binary": ("\n".join(good).encode() + b"\n" + garbage, 3),
        "torn last line": ("\n".join(good + [good[1][:57]]).encode(), 3),
        "json that is not a record": ("\n".join(["null", "[]", '"text"', "1e999", "{}", "[" * 100_000]
                                                + good).encode() + b"\n", 3),
        "a 2 MiB line": ("\n".join([good[0], "x" * (2 << 20), good[1]]).encode() + b"\n", 2),
        "NUL bytes": (b"\x00" * 100 + b"\n" + good[0].encode() + b"\n\x00" + good[1].encode() + b"\n", 1),
        "UTF-16": ("\n".join(good).encode("utf-16"), 0),
        "CRLF line ends": ("\r\n".join(good).encode() + b"\r\n", 3),
    }


HOSTILE = ["empty", "comments only", "binary garbage", "good then binary", "torn last line",
           "json that is not a record", "a 2 MiB line", "NUL bytes", "UTF-16", "CRLF line ends"]


@pytest.mark.parametrize("kind", HOSTILE)
def test_best_inspect_and_apply_read_what_they_can(invoke: Invoke, matmul_log: Path, tiny_job, tmp_path: Path,
                                                   kind: str) -> None:
    contents, records = _hostile_logs(matmul_log)[kind]
    log = tmp_path / "hostile.log"
    log.write_bytes(contents)
    best = invoke("best", str(log), "--json")
    assert best.exit_code == 0, best.output
    assert json.loads(best.stdout)["records"] == records
    inspect = invoke("inspect", str(log), "--json")
    assert inspect.exit_code == 0, inspect.output
    assert json.loads(inspect.stdout)["records"] == records
    for result in (best, inspect):
        assert "Traceback" not in result.stderr and "RuntimeWarning" not in result.stderr
        for line in result.stderr.splitlines():  # each warning names the log (and the line)
            assert line.startswith(f"warning: {log}:"), line
        assert len(result.stderr.splitlines()) <= 8  # one per kind of problem, not one per line
    job, _ = tiny_job()
    applied = invoke("apply", job, "--log", str(log), "--json")
    assert applied.exit_code == 0, applied.output
    assert json.loads(applied.stdout)["tasks"][0]["fallback"] == (records == 0)
    assert log.read_bytes() == contents  # read, never changed


@pytest.mark.parametrize("kind", ["torn last line", "binary garbage", "json that is not a record"])
def test_tune_resumes_over_a_hostile_log_and_loses_nothing(invoke: Invoke, matmul_log: Path, tiny_job,
                                                           kind: str) -> None:
    job, log = tiny_job(n_trial=4)
    contents, records = _hostile_logs(matmul_log)[kind]
    log.parent.mkdir(parents=True, exist_ok=True)
    log.write_bytes(contents)
    result = invoke("tune", job, "--json")
    assert result.exit_code == 0, result.output
    task = json.loads(result.stdout)["tasks"][0]
    assert task["previous"] == records and task["previous"] + task["measured"] == 4
    after = log.read_bytes()
    assert after.startswith(contents)  # nothing before is lost or rewritten
    new = after[len(contents):].decode().lstrip("\n").splitlines()
    assert len(new) == task["measured"]
    indices = [json.loads(line)["config"]["index"] for line in new]
    old = [json.loads(line)["config"]["index"] for line in _good_lines(matmul_log)] if records else []
    assert len(set(indices)) == len(indices) and not set(indices) & set(old)


def test_places_that_are_not_logs_are_usage_errors(invoke: Invoke, matmul_log: Path, tiny_job,
                                                   tmp_path: Path) -> None:
    fifo = tmp_path / "fifo.log"
    os.mkfifo(fifo)
    job, log = tiny_job(n_trial=1)
    for place, says in ((tmp_path, "is a directory"), (fifo, "is not a regular file"),
                        (tmp_path / "missing.log", "does not exist")):
        for args in (("best", str(place)), ("inspect", str(place)), ("apply", job, "--log", str(place))):
            result = invoke(*args)
            assert result.exit_code == 2, (args, result.output)
            assert says in result.stderr and str(place) in result.stderr, result.stderr
    for place, says in ((fifo, "is not a regular file"), (matmul_log / "x.log", f"{matmul_log} is not a")):
        result = invoke("tune", job, "--log", str(place))
        assert result.exit_code == 2, result.output
        assert result.stderr.startswith(f"error: {place}: ") and says in result.stderr
    directory = tmp_path / "logdir"
    directory.mkdir()
    yaml_dir = tmp_path / "dirlog.yaml"
    yaml_dir.write_text(Path(job).read_text().replace(str(log), str(directory)))
    result = invoke("tune", str(yaml_dir))
    assert result.exit_code == 2
    assert result.stderr == f"error: {yaml_dir}:3: log: {directory}: is a directory, not a log file\n"
    assert not (tmp_path / "logdir.lock").exists() and not fifo.with_name("fifo.log.lock").exists()


@pytest.mark.slow
def test_two_tunes_on_one_log_the_second_is_refused_and_the_first_finishes(tiny_job, tmp_path: Path) -> None:
    job, log = tiny_job(n_trial=8, min_repeat_ms=400, n_parallel=1)
    link = tmp_path / "alias.log"
    link.symlink_to(log)
    first = subprocess.Popen([str(TUNECLI), "tune", job, "--quiet"], stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.time() + 60
        while time.time() < deadline and not (log.exists() and log.read_text().strip()):
            time.sleep(0.05)
        assert first.poll() is None, "the first tune ended before the second started"
        second = subprocess.run([str(TUNECLI), "tune", job, "--log", str(link)], capture_output=True,
                                text=True, timeout=60)
        assert second.returncode == 2
        assert second.stderr == (f"error: {link}: another tuning run (pid {first.pid}) is writing this log: "
                                 "wait for it, or write to another log (--log PATH)\n")
        assert first.wait(timeout=120) == 0
    finally:
        if first.poll() is None:
            first.kill()
    indices = [json.loads(line)["config"]["index"] for line in log.read_text().splitlines()]
    assert len(indices) == len(set(indices)) == 8


@pytest.mark.slow
def test_random_interrupts_then_resume_lose_nothing_and_measure_nothing_twice(invoke: Invoke,
                                                                               tiny_job) -> None:
    """Ctrl-C (SIGINT), kill (SIGTERM) and kill -9 at random moments, then a resume each time."""
    job, log = tiny_job(n_trial=20, min_repeat_ms=30, n_parallel=2)
    rng = random.Random(15)
    for sig in (signal.SIGINT, signal.SIGKILL, signal.SIGTERM, signal.SIGKILL, signal.SIGINT, signal.SIGKILL):
        before = log.read_text() if log.exists() else ""
        proc = subprocess.Popen([str(TUNECLI), "tune", job, "--quiet"], stderr=subprocess.PIPE, text=True)
        time.sleep(rng.uniform(1.0, 5.0))
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=60)
        assert proc.returncode in (0, 130, -signal.SIGKILL), err
        assert "Traceback" not in err
        assert (log.read_text() if log.exists() else "").startswith(before)  # what was there stays
    result = invoke("tune", job, "--json")
    assert result.exit_code == 0, result.output
    lines = log.read_text().splitlines()
    indices = [json.loads(line)["config"]["index"] for line in lines if line.strip()]  # no torn line
    assert len(indices) == len(set(indices)) == 20
