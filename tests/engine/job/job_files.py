"""A valid job file for the schema tests, and writing variants of it."""

from __future__ import annotations

import textwrap
from pathlib import Path

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
