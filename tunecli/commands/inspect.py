"""``tunecli inspect``: a job's config spaces and loop nests, or a log's summary and convergence."""

from __future__ import annotations

import json

import click
from rich.table import Table

from tunecli.commands.app import App
from tunecli.engine.job.inspect_job import LogView, TaskView, inspect_job, inspect_log

_JOB_SUFFIXES = (".yaml", ".yml")


def _render_tasks(app: App, views: list[TaskView]) -> None:
    for view in views:
        app.echo(f"# task {view.index}: {view.label}  ({view.flop:.0f} FLOP)")
        app.echo(view.space)
        if view.lowered is not None:
            app.echo(f"# config {view.config}")
            app.echo(view.lowered)


def _plot(view: LogView, color: bool) -> str:
    """The best-so-far curves drawn in text (one plot per unit)."""
    import plotext  # 0.15 s to import: only when a plot is drawn

    figure = plotext.figure
    out = []
    for unit in sorted({w.unit for w in view.workloads}):
        figure.clear()
        for curve in (w for w in view.workloads if w.unit == unit):
            points = [(i, y) for i, y in enumerate(curve.best_so_far(), start=1) if y is not None]
            if points:
                signal = figure.signal([p[0] for p in points], [p[1] for p in points]).lines()
                signal.label(curve.label[:40])
                figure.draw(signal)
        figure.plot_size(78, 18)
        figure.title(f"best {unit} so far")
        figure.label("trial", "x")
        out.append(figure.build().string(colorless=not color))
    return "\n".join(out)


def _render_log(app: App, view: LogView) -> None:
    errors = ", ".join(f"{k} {v}" for k, v in view.errors.most_common()) or "none"
    app.echo(f"{view.path}: {view.records} records, errors: {errors}")
    table = Table()
    for name in ("workload", "target", "trials", "errors", "best"):
        table.add_column(name, justify="right" if name in ("trials", "best") else "left", overflow="fold")
    for w in view.workloads:
        best = w.best_so_far()[-1] if w.costs else None
        table.add_row(w.label, w.target, str(len(w.costs)),
                      ", ".join(f"{k} {v}" for k, v in w.errors.most_common()) or "-",
                      f"{best:.4f} {w.unit}" if best is not None else "-")
    app.console.print(table)
    if any(y is not None for w in view.workloads for y in w.best_so_far()):
        app.echo(_plot(view, app.console.is_terminal))
    if view.png:
        app.echo(f"wrote {view.png}")


@click.command()
@click.argument("path", type=click.Path(exists=True, dir_okay=False))
@click.option("--task", type=click.IntRange(min=0), help="Job: only this task (0-based).")
@click.option("--config", type=click.IntRange(min=0),
              help="Job: also print the loop nest of this config index.")
@click.option("--png", type=click.Path(dir_okay=False), help="Log: also write the convergence plot as PNG.")
@click.option("--json", "as_json", is_flag=True, help="Log: print the summary as JSON.")
@click.pass_obj
def inspect(app: App, path: str, task: int | None, config: int | None, png: str | None,
            as_json: bool) -> None:
    """Inspect a job file (PATH.yaml) or a tuning log (any other PATH).

    For a job: the config space of each task, printed as ``print(task.config_space)`` does,
    and with --config the lowered loop nest of that config. For a log: records, errors by kind,
    the best result per workload and its convergence over the trials.
    """
    is_job = path.endswith(_JOB_SUFFIXES)
    if is_job and (png or as_json):
        raise click.UsageError("--png and --json apply to logs, not to job files")
    if not is_job and (task is not None or config is not None):
        raise click.UsageError("--task and --config apply to job files (.yaml), not to logs")
    if is_job:
        _render_tasks(app, inspect_job(path, task=task, config=config))
        return
    view = inspect_log(path, png=png)
    if as_json:
        app.echo(json.dumps(view.as_dict(), indent=2))
    else:
        _render_log(app, view)
