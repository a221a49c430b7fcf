"""Long steps of a command shown on stderr: a line per step, a line now and then while one runs."""

from __future__ import annotations

import io
import time

from rich.console import Console

from tunecli.commands.app import App
from tunecli.commands.steps import StepView


def plain_app() -> tuple[App, io.StringIO]:
    app = App()
    out = io.StringIO()
    app.err = Console(file=out, width=80, force_terminal=False)
    return app, out


def test_each_step_is_a_line_and_a_running_step_is_repeated_with_its_seconds() -> None:
    app, out = plain_app()
    with StepView(app, "apply", every=0.05) as steps:
        steps("building resnet-18 (1, 3, 224, 224) float32 with the best configs")
        time.sleep(0.3)
        steps("timing the builds on 1 thread " + "x" * 80)
    lines = out.getvalue().splitlines()
    assert lines[0] == "apply: building resnet-18 (1, 3, 224, 224) float32 with the best configs"
    assert any(line.startswith("apply: still building resnet-18") and line.endswith(" s)") for line in lines)
    assert any(line.startswith("apply: timing the builds on 1 thread xxx") for line in lines)
    assert lines[-1].startswith("apply: done in ") and all(len(line) <= 80 for line in lines)


def test_a_command_without_long_steps_prints_nothing() -> None:
    app, out = plain_app()
    with StepView(app, "apply", every=0.01):
        time.sleep(0.05)
    assert out.getvalue() == ""


def test_a_step_ended_by_other_progress_is_not_repeated() -> None:
    app, out = plain_app()
    with StepView(app, "tune", every=0.05) as steps:
        steps("extracting the tunable tasks")
        steps.end_step()  # the tasks' progress lines follow
        time.sleep(0.3)
    lines = out.getvalue().splitlines()
    assert lines[0] == "tune: extracting the tunable tasks" and lines[-1].startswith("tune: done in ")
    assert not any("still" in line for line in lines), lines
