"""``tunecli tune``: tune every task of a job, resuming from its log."""

from __future__ import annotations

import json
import signal
import textwrap
import time
from collections.abc import Callable

import click
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from tunecli.commands.app import EXIT_INTERRUPTED, App, fail, raise_interrupt
from tunecli.commands.steps import StepView
from tunecli.commands.tables import label_lines, print_fitted, table
from tunecli.engine.actions.job_file import tune_job
from tunecli.engine.actions.tune import TaskOutcome, TuneEvent, TuneSummary
from tunecli.engine.task.text import workload_text
from tunecli.engine.tuner.tuner_kinds import TUNERS
from tunecli.errors import LogInUseError


def _progress_layout(width: int) -> tuple[list[ProgressColumn], int]:
    """The progress columns for a terminal ``width`` columns wide, and the longest task label
    that still fits: the bar narrows and goes, then the clocks, before the counts would be cut
    (80 columns keep the counts, errors and both clocks)."""
    bar = 40 if width >= 160 else 20 if width >= 120 else 10 if width >= 100 else 0
    bars: list[ProgressColumn] = [BarColumn(bar_width=bar)] if bar else []
    clocks: list[ProgressColumn] = [TimeElapsedColumn(), TimeRemainingColumn()] if width >= 76 else []
    columns = [TextColumn("[bold]task {task.fields[n]}[/]"), TextColumn("{task.description}"), *bars,
               MofNCompleteColumn(), TextColumn("{task.fields[flops]}"), TextColumn("{task.fields[errors]}"),
               *clocks]
    # "task 12/12", "2000/2000", "1234.5/1234.5 GFLOPS", "99 err", two clocks, one space between
    others = 10 + 9 + 20 + 6 + 8 * len(clocks) + bar + len(columns) - 1
    return columns, max(8, min(80, width - others - 1))


class _ProgressView:
    """Renders ``TuneEvent``s as one rich progress line per task (on stderr)."""

    def __init__(self, app: App) -> None:
        columns, self.label_max = _progress_layout(app.err.width)
        self.progress = Progress(*columns, console=app.err)
        self.ids: dict[int, TaskID] = {}

    def __call__(self, event: TuneEvent) -> None:
        fields = dict(n=f"{event.index + 1}/{event.n_tasks}", errors=f"{event.errors} err",
                      flops=f"{event.cur_flops / 1e9:.1f}/{event.best_flops / 1e9:.1f} GFLOPS")
        all_trials = event.all_trials or event.budget or 0
        if all_trials and (event.budget is not None or event.n_tasks > 1):  # a line for all tasks
            if -1 not in self.ids:
                what = "all tasks (budget)" if event.budget is not None else "all tasks"
                self.ids[-1] = self.progress.add_task(what, total=all_trials, n="total", errors="", flops="")
            self.progress.update(self.ids[-1], completed=event.spent)
        if event.kind == "start":
            if event.done:
                self.progress.console.print(_resume_line(event), markup=False, soft_wrap=True)
            n = self.label_max
            label = event.label if len(event.label) <= n else event.label[:n - 1] + "…"
            self.ids[event.index] = self.progress.add_task(label, total=event.total,
                                                           completed=event.done, **fields)
        elif event.kind == "batch":
            self.progress.update(self.ids[event.index], completed=event.done, **fields)
        elif event.kind == "remeasure":
            self.progress.console.print(_remeasure_line(event), markup=False, soft_wrap=True)
        else:
            self.progress.update(self.ids[event.index], completed=event.done)

    def step(self, text: str) -> None:
        """A step other than the tasks' tuning (extraction, the graph tuner): a line above the
        progress lines."""
        self.progress.console.print(f"tune: {text}", markup=False, soft_wrap=True)


#: Columns of a plain progress line (stderr not a terminal: a log file, a pipe).
PLAIN_WIDTH = 80
#: Seconds between plain progress lines of a task still running.
PLAIN_EVERY_S = 10.0


def _plain_progress(app: App, every: float = PLAIN_EVERY_S) -> Callable[[TuneEvent], None]:
    """Plain lines for logs and pipes (stderr is not a terminal), each within ``PLAIN_WIDTH``
    columns: a line when a task resumes or re-measures, its trials every ``every`` seconds while
    it runs, and a line when it ends (with the trials of all tasks)."""
    last = [time.monotonic()]

    def show(event: TuneEvent) -> None:
        if event.kind == "start":
            last[0] = time.monotonic()
            if event.done:
                _plain(app, _resume_line(event))
        elif event.kind == "remeasure":
            _plain(app, _remeasure_line(event))
        elif event.kind == "batch" and time.monotonic() - last[0] >= every:
            last[0] = time.monotonic()
            _plain(app, f"task {event.index + 1}/{event.n_tasks}: {_counts(event)}")
        elif event.kind == "end":
            total = f"; all tasks {event.spent}/{event.all_trials}" if event.n_tasks > 1 else ""
            _plain(app, f"task {event.index + 1}/{event.n_tasks} {event.label}: {_counts(event)}{total}")

    return show


def _counts(event: TuneEvent) -> str:
    best = f"best {event.best_flops / 1e9:.2f} GFLOPS" if event.best_flops > 0 else "no valid config yet"
    return f"{event.done}/{event.total} trials, {best}, {event.errors} errors, {event.elapsed:.1f} s"


def _plain(app: App, line: str) -> None:
    """Print ``line``; one longer than ``PLAIN_WIDTH`` breaks after the task's label (``: ``), the
    rest indented, and a label longer than a line between its arguments, each argument whole."""
    head, sep, rest = line.partition(": ")
    if len(line) > PLAIN_WIDTH and sep:
        line = "\n".join([*_label_lines(head + ":"), f"  {rest}"])
    app.err.print(line, markup=False, soft_wrap=True)


def _label_lines(text: str) -> list[str]:
    """``task 1/2 name(arg, arg, ...):`` in lines of ``PLAIN_WIDTH``, broken between the arguments."""
    return label_lines(text, PLAIN_WIDTH)


def _resume_line(event: TuneEvent) -> str:
    return (f"task {event.index + 1}/{event.n_tasks} {event.label}: resuming, {event.done} of "
            f"{event.total} trials are already in the log")


def _remeasure_line(event: TuneEvent) -> str:
    return (f"task {event.index + 1}/{event.n_tasks} {event.label}: re-measuring the {event.remeasuring} "
            "best configs")


_NUMBERS = ("trials", "new", "errors", "best GFLOPS", "best ms")


def _numbers(t: TaskOutcome) -> list[str]:
    return [f"{t.previous + t.measured}/{t.n_trial}", str(t.measured), str(t.errors),
            f"{t.best_flops / 1e9:.2f}" if t.ok else "-",
            f"{t.best_cost * 1e3:.4f}" if t.best_cost is not None else "-"]


def _print_summary(app: App, summary: TuneSummary) -> None:
    title = f"{summary.job}: {summary.tuner} tuner, log {summary.log}"
    wide = table(title, ("task", "workload", *_NUMBERS, "config"), right=("task", *_NUMBERS))
    narrow = table(title, ("task", *_NUMBERS), right=("task", *_NUMBERS), wrap=False)
    notes = []
    for t in summary.tasks:
        workload, config = workload_text(t.template, t.args), t.best_config if t.ok else "no valid config"
        wide.add_row(str(t.index), workload, *_numbers(t), config)
        narrow.add_row(str(t.index), *_numbers(t))
        notes.append(f"task {t.index}: {workload}: {config}")
    footer = []
    latency = summary.weighted_latency
    shown = f"{latency * 1e3:.4f} ms" if latency is not None else "-"
    if summary.budget is not None:
        footer.append(f"budget {summary.budget} trials, {summary.task_scheduler} task scheduler; "
                      f"weighted latency {shown}")
    if summary.model is not None:
        trials = sum(t.previous + t.measured for t in summary.tasks)
        footer.append(f"network {summary.model}: {len(summary.tasks)} tasks, {trials} trials; kernel time "
                      f"(best task of each operator x its calls) {shown}")
    if summary.remeasure:
        footer.append(f"re-measured {sum(t.remeasured for t in summary.tasks)} configs (the "
                      f"{summary.remeasure} best of each task, not counted as trials)")
    graph = summary.graph
    if graph is not None and graph.error is None:
        footer.append(f"graph tuner {graph.kind}: {graph.convolutions} convolutions, {graph.transforms} "
                      f"layout transforms timed; predicted {_ms(graph.predicted)} (each kernel's best: "
                      f"{_ms(graph.kernel_only)}); wrote {graph.path}")
    print_fitted(app.console, wide, lambda: narrow, lambda: notes, footer)


def _ms(seconds: float | None) -> str:
    return f"{seconds * 1e3:.4f} ms" if seconds is not None else "-"


@click.command()
@click.argument("job", type=click.Path(dir_okay=False))
@click.option("--n-trial", type=click.IntRange(min=1),
              help="Trials per task (overrides tuner.n_trial, or replaces tuner.budget).")
@click.option("--tuner", type=click.Choice(tuple(TUNERS)), help="Tuner kind (overrides tuner.kind).")
@click.option("--log", "log", type=click.Path(dir_okay=False), help="Log to append to (overrides log).")
@click.option("--seed", type=click.IntRange(min=0), help="Seed of the tuner (overrides tuner.seed).")
@click.option("--remeasure", type=click.IntRange(min=0), metavar="K",
              help="Measure each task's K best configs again at its end, 0 for none (overrides "
                   "tuner.remeasure).")
@click.option("--cluster", metavar="ADDRESS",
              help="Build and time on a Ray cluster: auto, ray://HOST:10001 or HOST:6379 (overrides "
                   "cluster.address; extra tunecli[ray]).")
@click.option("--json", "as_json", is_flag=True, help="Print a machine-readable summary on stdout.")
@click.option("-q", "--quiet", is_flag=True,
              help="Print nothing but errors (and the JSON summary with --json).")
@click.pass_obj
def tune(app: App, job: str, n_trial: int | None, tuner: str | None, log: str | None, seed: int | None,
         remeasure: int | None, cluster: str | None, as_json: bool, quiet: bool) -> None:
    """Tune every task of JOB, appending each measurement to the log.

    Running again resumes: configs already in the log are not measured again and count
    toward n_trial; the tuner starts from what the log holds. Ctrl-C or kill (exit code 130) loses
    no finished measurement. Exit code 1 when a task has no valid config. Progress goes to stderr,
    the results table (or with --json only the JSON summary) to stdout.
    """
    old_term = signal.signal(signal.SIGTERM, raise_interrupt)
    try:
        if quiet:
            summary = tune_job(job, n_trial=n_trial, tuner=tuner, log=log, seed=seed,
                               remeasure=remeasure, cluster=cluster)
        elif not app.err.is_terminal:
            with StepView(app, "tune") as steps:  # the graph tuner's step, with a line now and then
                plain = _plain_progress(app)

                def on_event(event: TuneEvent) -> None:
                    steps.end_step()  # the extraction is over once a task reports
                    plain(event)

                summary = tune_job(job, n_trial=n_trial, tuner=tuner, log=log, seed=seed, remeasure=remeasure,
                                   cluster=cluster, on_event=on_event, on_step=steps)
        else:
            view = _ProgressView(app)
            with view.progress:
                summary = tune_job(job, n_trial=n_trial, tuner=tuner, log=log, seed=seed,
                                   remeasure=remeasure, cluster=cluster, on_event=view, on_step=view.step)
    except LogInUseError as err:
        err.add_note("--log PATH")  # printed after the message (app.TuneGroup)
        raise
    except KeyboardInterrupt:
        click.echo("interrupted: the finished measurements are in the log; run the same command again "
                   "to resume", err=True)
        click.get_current_context().exit(EXIT_INTERRUPTED)
    finally:
        signal.signal(signal.SIGTERM, old_term)
    if as_json:
        app.echo(json.dumps(summary.as_dict(), indent=2))
    elif not quiet:
        _print_summary(app, summary)
    if not quiet:  # like the progress, within the width of stderr
        for note in summary.notes:
            click.echo("\n".join(textwrap.wrap(f"warning: {note}", app.err.width, subsequent_indent="  ")),
                       err=True)
    if summary.graph is not None and summary.graph.error is not None:
        fail(f"graph tuner {summary.graph.kind}: {summary.graph.error} (the kernel tuning is in "
             f"{summary.log})")
    failed = summary.unconfigured()
    for t in summary.tasks:
        if not t.ok and all(t is not f for f in failed):
            click.echo(f"task {t.index} ({t.template}): no valid config; its operator runs another of its "
                       "tasks", err=True)
    for t in failed:
        if summary.budget is not None and t.previous + t.measured == 0:
            click.echo(f"task {t.index} ({t.template}): no trial: the budget of {summary.budget} trials "
                       f"was spent ({sum(o.previous + o.measured for o in summary.tasks)} in the log); "
                       "raise tuner.budget or give --n-trial",
                       err=True)
            continue
        click.echo(f"task {t.index} ({t.template}): first error: {t.first_error or 'none in this run'}",
                   err=True)
    if failed:
        names = ", ".join(f"task {t.index} ({t.template})" for t in failed)
        fail(f"no valid config found for {names}; errors by kind: `tunecli inspect {summary.log}`")
