"""The command group: help, version, error rendering and exit codes."""

from __future__ import annotations

import logging
import os
import subprocess
from pathlib import Path

from .conftest import TUNECLI, Invoke


def test_help_lists_every_command(invoke: Invoke) -> None:
    result = invoke("--help")
    assert result.exit_code == 0
    for command in ("tune", "best", "apply", "inspect", "tracker", "server", "query"):
        assert f"  {command} " in result.output


def test_usage_error_exits_2(invoke: Invoke) -> None:
    result = invoke("tune")
    assert result.exit_code == 2
    assert "Missing argument 'JOB'" in result.stderr


def test_job_error_is_one_line_without_traceback(invoke: Invoke, tmp_path: Path) -> None:
    job = tmp_path / "bad.yaml"
    job.write_text("name: bad\ntasks:\n  - template: dense.x86\n    args: [4, 4, 4]\n"
                   "tuner:\n  kind: random\n  n_trial: many\n")
    log = tmp_path / "empty.log"
    log.write_text("")
    for command in (["tune", str(job)], ["inspect", str(job)], ["apply", str(job), "--log", str(log)]):
        result = invoke(*command)
        assert result.exit_code == 2, command
        assert result.stderr == f"error: {job}:7: tuner.n_trial: expected an integer, got 'many'\n"
        assert result.stdout == ""
    verbose = invoke("--verbose", "tune", str(job))
    assert verbose.exit_code == 2
    assert "Traceback (most recent call last)" in verbose.stderr
    assert verbose.stderr.endswith(f"error: {job}:7: tuner.n_trial: expected an integer, got 'many'\n")


def test_installed_script_runs(tmp_path: Path) -> None:
    job = tmp_path / "bad.yaml"
    job.write_text("name: bad\ntasks: []\ntuner: {kind: random, n_trial: 1}\n")
    proc = subprocess.run([str(TUNECLI), "tune", str(job)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert proc.stderr == f"error: {job}:2: tasks: expected at least one task\n"
    assert "Traceback" not in proc.stderr


def test_output_into_a_closed_pipe_ends_quietly(matmul_log: Path) -> None:
    """`tunecli best x.log | head -1`: once the reader has gone, no `error: [Errno 32] Broken pipe`."""
    read, write = os.pipe()
    os.close(read)  # every write to the pipe fails, as after `head` has exited
    try:
        proc = subprocess.run([str(TUNECLI), "best", str(matmul_log)], stdout=write, stderr=subprocess.PIPE,
                              text=True, timeout=60)
    finally:
        os.close(write)
    assert proc.returncode == 1
    assert proc.stderr == ""


def test_unwritable_log_is_an_error_not_a_traceback(invoke: Invoke, tiny_job, tmp_path: Path) -> None:
    job, _ = tiny_job(n_trial=1)
    blocker = tmp_path / "file"
    blocker.write_text("")
    result = invoke("tune", job, "--log", str(blocker / "x.log"))
    assert result.exit_code == 2  # refused before anything runs, as a bad `log:` in the job is
    assert result.stderr == f"error: {blocker / 'x.log'}: {blocker} is not a directory\n"
    assert not (tmp_path / "logs").exists()


def test_logging_is_restored_after_a_command(invoke: Invoke, tmp_path: Path) -> None:
    logger = logging.getLogger("autotvm")
    before = (logger.level, logger.propagate, list(logger.handlers))
    broken = tmp_path / "broken.log"
    broken.write_text("{not json\n")
    result = invoke("--verbose", "best", str(broken))
    assert result.exit_code == 0
    assert f"warning: {broken}:1: skipping" in result.stderr
    assert (logger.level, logger.propagate, list(logger.handlers)) == before
