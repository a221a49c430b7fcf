"""A valid job file for the schema tests, writing variants of it, and checking their problems."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import pytest

from tunecli.engine.job.spec import load_job
from tunecli.errors import JobError

GOOD = """\
name: small
target: llvm
tasks:
  - template: tutorial/matmul
    args: [64, 64, 64, float32]
  - template: dense.x86
    args: {N: 16, K: 32, M: 16}
tuner:
  kind: ga
  n_trial: 20
  early_stopping: 10
  seed: 3
  pop_size: 8
measure:
  builder: {timeout: 5, n_parallel: 2}
  runner: {number: 2, repeat: 1, min_repeat_ms: 0.5, check_correctness: true}
"""


def write(tmp_path: Path, text: str) -> str:
    path = tmp_path / "job.yaml"
    path.write_text(textwrap.dedent(text))
    return str(path)


def mistakes(cases: list[tuple[str, str, str]]) -> list[Any]:
    """``(old, new, message)`` cases as pytest parameters, each named by its field and line."""
    return [pytest.param(*case, id=case[2].split(":")[1] + case[2][:3]) for case in cases]


def assert_reported(tmp_path: Path, old: str, new: str, message: str) -> None:
    """``GOOD`` with ``old`` replaced by ``new`` fails with exactly ``message`` ("line: field: ...",
    one problem a line), each problem prefixed with the file's path."""
    assert old in GOOD
    path = write(tmp_path, GOOD.replace(old, new, 1))
    with pytest.raises(JobError) as info:
        load_job(path)
    assert info.value.problems == tuple(f"{path}:{line}" for line in message.split("\n"))
