"""tune's progress when stderr is not a terminal: plain lines within 80 columns, also while a task runs."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from rich.console import Console

from tunecli.commands.app import App
from tunecli.commands.tune import _plain_progress, _progress_layout
from tunecli.engine.actions.tune import TuneEvent

from .conftest import Invoke, write_model_job

LABEL = "conv2d_NCHWc.x86((1, 64, 56, 56, float32), (64, 64, 3, 3, float32), (1, 1), (1, 1, 1, 1))"


def shown(events: list[TuneEvent], every: float) -> list[str]:
    app = App()
    out = io.StringIO()
    app.err = Console(file=out, width=80, force_terminal=False)
    show = _plain_progress(app, every=every)
    for event in events:
        show(event)
    return out.getvalue().splitlines()


def run(done: int) -> list[TuneEvent]:
    start = TuneEvent("start", 2, 17, LABEL, 8, done)
    batches = [TuneEvent("batch", 2, 17, LABEL, 8, d, 2e9, 3e9, 0, 1.5 * d) for d in range(done + 1, 9)]
    return [start, *batches, TuneEvent("end", 2, 17, LABEL, 8, 8, 0, 3e9, 0, 12.0, None, 40, 136)]


def test_a_running_task_gets_a_line_every_period_and_each_line_fits_80_columns() -> None:
    lines = shown(run(0), every=0.0)
    assert lines[:2] == ["task 3/17: 1/8 trials, best 3.00 GFLOPS, 0 errors, 1.5 s",
                         "task 3/17: 2/8 trials, best 3.00 GFLOPS, 0 errors, 3.0 s"]
    assert lines[-3:] == ["task 3/17 conv2d_NCHWc.x86((1, 64, 56, 56, float32), (64, 64, 3, 3, float32),",
                          "    (1, 1), (1, 1, 1, 1)):",
                          "  8/8 trials, best 3.00 GFLOPS, 0 errors, 12.0 s; all tasks 40/136"]
    assert len(lines) == 11 and all(len(line) <= 80 for line in lines)


def test_without_a_period_passed_only_the_task_s_end_is_shown() -> None:
    lines = shown(run(3), every=3600.0)
    assert " ".join(" ".join(lines).split()) == (
        f"task 3/17 {LABEL}: resuming, 3 of 8 trials are already in the log "
        f"task 3/17 {LABEL}: 8/8 trials, best 3.00 GFLOPS, 0 errors, 12.0 s; all tasks 40/136")
    assert len(lines) == 6 and all(len(line) <= 80 for line in lines)


def test_at_80_columns_the_progress_line_keeps_its_counts_errors_and_clocks() -> None:
    columns, label = _progress_layout(80)
    names = [type(c).__name__ for c in columns]
    assert "TimeElapsedColumn" in names and "TimeRemainingColumn" in names and "BarColumn" not in names
    texts = [c.text_format for c in columns if hasattr(c, "text_format")]
    assert any("errors" in t for t in texts) and label >= 8
    wide, _ = _progress_layout(160)
    assert "BarColumn" in [type(c).__name__ for c in wide]


def test_a_model_job_s_extraction_is_a_step_of_its_own(invoke: Invoke, tmp_path: Path) -> None:
    """Extracting a network's tasks takes seconds before the first task starts: a line says so
    first; the tasks' lines follow, and the seconds of the whole end the output."""
    pytest.importorskip("onnx")
    from tests.engine.job.tiny_network import INPUT, SHAPE, write_tiny_onnx

    onnx = write_tiny_onnx(tmp_path / "tiny.onnx")
    shape = ", ".join(map(str, SHAPE))
    job = write_model_job(tmp_path, f"{{onnx: {onnx}, input: {{{INPUT}: [{shape}]}}}}", n_trial=1,
                          extra=f"log: {tmp_path / 'net.log'}\n")
    result = invoke("tune", str(job))
    assert result.exit_code == 0, result.output
    lines = result.stderr.split("warning: the machine was busy")[0].splitlines()  # a busy machine: said last
    assert lines[0] == "tune: extracting the tunable tasks"
    assert lines[1].startswith("task 1/") and lines[-1].startswith("tune: done in ")


def test_a_task_whose_every_trial_failed_says_so_rather_than_zero_gflops() -> None:
    failed = [TuneEvent("start", 0, 1, LABEL, 2, 0),
              TuneEvent("batch", 0, 1, LABEL, 2, 1, 0, 0, 1, 1.0),
              TuneEvent("end", 0, 1, LABEL, 2, 2, 0, 0, 2, 2.0, None, 2, 2)]
    lines = shown(failed, every=0.0)
    assert "task 1/1: 1/2 trials, no valid config yet, 1 errors, 1.0 s" in lines
    assert not any("0.00 GFLOPS" in line for line in lines)
