"""``tunecli tune`` on a disk that fills up: one error naming the log, no torn record, and a resume."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from .conftest import Invoke

PAGE = 4096


@pytest.fixture()
def small_disk(tmp_path: Path):
    """A 16 KiB tmpfs mounted at ``tmp_path/disk`` (skips where this user may not mount)."""
    disk = tmp_path / "disk"
    disk.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=16k", "tmpfs", str(disk)],
                             capture_output=True, text=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here: {mounted.stderr.strip()}")
    try:
        yield disk
    finally:
        subprocess.run(["umount", "-l", str(disk)], check=False)


def test_a_full_disk_stops_the_tune_with_the_log_named_and_whole_and_it_resumes(
        invoke: Invoke, tiny_job, small_disk: Path) -> None:
    job, _ = tiny_job(n_trial=24)
    log = small_disk / "tiny.log"
    filler = small_disk / "filler"
    filler.write_bytes(b"x" * (3 * PAGE))  # one page left: a few records fit, 24 do not
    first = invoke("tune", job, "--log", str(log))
    assert first.exit_code == 2, first.output
    assert f"error: {log}: cannot append to the log: No space left on device; every record written " \
           "before is kept" in first.stderr
    assert "run the same command again to resume" in first.stderr
    lines = log.read_text().splitlines()
    assert 0 < len(lines) < 24
    kept = [json.loads(line)["config"]["index"] for line in lines]  # every line a whole record
    filler.unlink()
    second = invoke("tune", job, "--log", str(log))
    assert second.exit_code == 0, second.output
    indices = [json.loads(line)["config"]["index"] for line in log.read_text().splitlines()]
    assert indices[:len(kept)] == kept
    assert len(indices) == len(set(indices)) == 24
