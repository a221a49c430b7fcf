"""Helpers of the command tests: running the CLI in-process, tiny jobs and real tuning logs."""

from __future__ import annotations

import io
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from rich.console import Console

from tunecli.commands import cli
from tunecli.commands.tune import _ProgressView
from tunecli.engine.log.record import encode
from tunecli.engine.measure import interleaved
from tunecli.engine.measure.result import MeasureErrorNo, MeasureInput, MeasureResult
from tunecli.engine.task.task import create

#: The installed console script (what `make install` puts in .venv/bin).
TUNECLI = Path(sys.executable).parent / "tunecli"

TINY_JOB = """\
name: tiny
target: llvm
log: {log}
tasks:
  - template: tutorial/matmul
    args: {{N: 16, L: 16, M: 16}}
tuner: {{kind: {tuner}, n_trial: {n_trial}, seed: 0}}
measure:
  builder: {{timeout: 20, n_parallel: {n_parallel}}}
  runner: {{number: 1, repeat: 1, min_repeat_ms: {min_repeat_ms}, timeout: 20, check_correctness: true}}
"""

MODEL_JOB = """\
name: {name}
model: {model}
tuner: {{kind: random, n_trial: {n_trial}, seed: 0}}
measure:
  builder: {{timeout: {timeout}, n_parallel: 2}}
  runner: {{number: 1, repeat: 1, timeout: {timeout}}}
"""


Invoke = Callable[..., Result]


def write_model_job(tmp_path: Path, model: str, n_trial: int = 2, name: str = "net", extra: str = "",
                    timeout: float = 20) -> Path:
    """Write ``tmp_path/<name>.yaml``: a random-tuner job of the network ``model`` (a YAML mapping),
    ``n_trial`` trials per task, builds and runs limited to ``timeout`` seconds, then the ``extra``
    YAML lines."""
    path = tmp_path / f"{name}.yaml"
    path.write_text(MODEL_JOB.format(name=name, model=model, n_trial=n_trial, timeout=timeout) + extra)
    return path


@pytest.fixture(autouse=True)
def no_settle_pause(monkeypatch: pytest.MonkeyPatch) -> None:
    """apply times its contenders without the pause between rounds (``SETTLE_S``): the pause steadies
    timings on a quiet machine, and these tests check what apply reports, not how steady its times are."""
    monkeypatch.setattr(interleaved, "SETTLE_S", 0.0)


class FakeTerminal:
    """What ``tune``'s progress view draws on: an ``err`` console of ``width`` columns writing to a
    string, as a terminal."""

    def __init__(self, width: int = 160) -> None:
        self.err = Console(file=io.StringIO(), width=width, force_terminal=True, color_system=None)


def progress_table_text(view: _ProgressView, width: int = 160) -> str:
    """The progress view's task table as plain text ``width`` columns wide."""
    out = Console(file=io.StringIO(), width=width, color_system=None)
    out.print(view.progress.make_tasks_table(view.progress.tasks))
    return out.file.getvalue()


def _invoke(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args), prog_name="tunecli")


@pytest.fixture()
def invoke() -> Invoke:
    """``invoke(*args)`` runs ``tunecli ARGS`` in this process and returns click's Result."""
    return _invoke


@pytest.fixture()
def tiny_job(tmp_path: Path) -> Callable[..., tuple[str, Path]]:
    """``tiny_job(n_trial=4, tuner="random", min_repeat_ms=0, n_parallel=2)`` writes a tiny matmul job
    (``n_parallel``: configs built, so measured, per batch).

    Returns the job's path and its log's path (the log is under ``tmp_path/logs``).
    """

    def write(n_trial: int = 4, tuner: str = "random", min_repeat_ms: float = 0,
              n_parallel: int = 2) -> tuple[str, Path]:
        log = tmp_path / "logs" / "tiny.log"
        path = tmp_path / "tiny.yaml"
        path.write_text(TINY_JOB.format(log=log, n_trial=n_trial, tuner=tuner, min_repeat_ms=min_repeat_ms,
                                        n_parallel=n_parallel))
        return str(path), log

    return write


@pytest.fixture()
def matmul_log(tmp_path: Path) -> Path:
    """A log of tutorial/matmul(16, 16, 16): configs 3 (1 ms), 7 (0.5 ms), 9 (runtime error)."""
    task = create("tutorial/matmul", (16, 16, 16, "float32"), "llvm")
    now = time.time()
    rows = [(3, (1e-3,), MeasureErrorNo.NO_ERROR), (7, (5e-4,), MeasureErrorNo.NO_ERROR),
            (9, ("crash", RuntimeError("crash")), MeasureErrorNo.RUNTIME_DEVICE)]
    path = tmp_path / "matmul.log"
    with open(path, "w") as file:
        for index, costs, error in rows:
            inp = MeasureInput(task.target, task, task.config_space.get(index))
            file.write(encode(inp, MeasureResult(costs, error, 0.1, now)) + "\n")
    return path
