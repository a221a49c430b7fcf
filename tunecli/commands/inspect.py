"""``tunecli inspect``: a job's config spaces and loop nests, or a log's summary and convergence.

The convergence plots (``commands.plots``) need the optional extra ``tunecli[plot]``: without it
the summary is still printed, and ``--png`` says what to install.
"""

from __future__ import annotations

import json
import textwrap

import click

from tunecli.commands.app import App
from tunecli.commands.log_args import is_job_file, readable_logs
from tunecli.commands.plots import PlottingUnavailable, require, text_plot, write_png
from tunecli.commands.steps import StepView
from tunecli.commands.tables import fixed, label_lines, print_fitted, table, wrap_items
from tunecli.engine.actions.inspect import NetworkBuildView, NetworkView, TaskView
from tunecli.engine.actions.job_file import inspect_job_file
from tunecli.engine.log.log_summary import LogView, inspect_log


def _comment(app: App, text: str, prose: bool = True) -> None:
    """Print the ``#`` comment ``text`` in lines of the console's width: a label broken between
    its arguments, other text (``prose``) between words (a config's knobs whole), the lines after
    the first starting ``#   ``."""
    width = app.console.width
    lines = label_lines(text, width, indent="#   ")
    if prose and len(lines) == 1 and len(text) > width:
        lines = textwrap.wrap(text, width, subsequent_indent="#   ", break_long_words=False,
                              break_on_hyphens=False)
    for line in lines:
        app.echo(line)


def _render_tasks(app: App, views: list[TaskView]) -> None:
    for view in views:
        _comment(app, f"# task {view.index}: {view.label}  ({view.flop:.0f} FLOP)")
        if view.named is not None:
            _comment(app, f"# (the job names {view.named})")
        if view.chosen is not None and (view.named is not None or view.config_source != "default"):
            _comment(app, f"# apply builds config {view.chosen}")
            _comment(app, f"#   from {view.config_source}", prose=False)  # a log's path whole beside it
            if view.why is not None:
                _comment(app, f"#   {view.why}")
        app.echo(view.space)
        if view.lowered is not None:
            _comment(app, f"# config {view.config}")
            app.echo(view.lowered)


def _mib(n: int) -> str:
    return f"{n / 2**20:.2f} MiB" if n >= 2**20 else f"{n / 2**10:.1f} KiB"


def _render_network(app: App, view: NetworkView) -> None:
    title = f"{view.job}: {view.model} on {view.target}"
    numbers = ("calls", "MFLOP", "share")
    wide = table(title, ("op", "task", "workload", *numbers), right=("op", "task", *numbers))
    narrow = table(title, ("op", "task", *numbers), right=("op", "task", *numbers), wrap=False)
    notes = []
    for op in view.operators:
        first = (str(op.index), str(op.occurrences), f"{op.flop / 1e6:.1f}", f"{op.share:.1%}")
        for (name, *numbers), index in zip([first] + [("alt", "", "", "")] * (len(op.tasks) - 1), op.tasks,
                                           strict=True):
            wide.add_row(name, str(index), view.tasks[index].label, *numbers)
            narrow.add_row(name, str(index), *numbers)
            notes.append(f"task {index}: {view.tasks[index].label}")
    alternatives = any(len(op.tasks) > 1 for op in view.operators)
    footer = [f"{len(view.operators)} tunable operators, {len(view.tasks)} tasks"
              + ("; alt: another task of the operator above (a build runs one of them per call)"
                 if alternatives else "")]
    footer += [f"task {i}: {view.tasks[i].label} (the job's tasks, not called by the network)"
               for i in view.listed]
    print_fitted(app.console, wide, lambda: narrow, lambda: notes, footer)
    for k, network in enumerate(view.networks):
        _render_build(app, network, len(view.networks) > 1,
                      k > 0 and network.kernels == view.networks[k - 1].kernels)


def _render_build(app: App, view: NetworkBuildView, heading: bool, same_kernels: bool = False) -> None:
    """One network's inputs, fused kernels, memory and configs (``heading``: its label first;
    ``same_kernels``: its kernels are the network's above, not listed again)."""
    width = app.console.width
    lines = [f"network {view.model}:"] if heading else []
    lines += [f"inputs: {', '.join(f'{n} {shape} {dtype}' for n, (shape, dtype) in view.inputs.items())}",
              f"{len(view.kernels)} fused kernels, {view.kernel_calls} calls per run",
              f"intermediate memory (executor plan): {_mib(view.intermediate_bytes)} (one buffer per value: "
              f"{_mib(view.unplanned_bytes)}; largest activation {_mib(view.largest_activation_bytes)}); "
              f"weights {_mib(view.weight_bytes)}"]
    for line in lines:
        app.console.print(line, markup=False, highlight=False)
    kernels = [f"{name} x{n}" if n > 1 else name for name, n in view.kernels.items()]
    listed = wrap_items("kernels: ", kernels, width)
    for line in ["kernels: those of the network above"] if same_kernels else listed:
        app.echo(line)
    if view.summary:
        app.echo(textwrap.fill(f"configs ({view.summary}):", width, subsequent_indent="  ",
                               break_long_words=False, break_on_hyphens=False))
        for label, source in view.configs.items():  # a workload and its source whole, on a line each
            line = f"  {label}: {source}"
            lines = [line] if len(line) <= width else [*label_lines(f"  {label}:", width),
                                                       *label_lines(f"    {source}", width, "      ")]
            if label in view.why:
                lines += textwrap.wrap(view.why[label], width, initial_indent=(pad := "    "),
                                       subsequent_indent=pad, break_long_words=False)
            for text in lines:
                app.echo(text)


def _render_log(app: App, view: LogView) -> None:
    errors = ", ".join(f"{k} {v}" for k, v in view.errors.most_common()) or "none"
    app.echo(f"{view.path}: {view.records} records, errors: {errors}")
    columns = ("trials", "errors", "best")
    wide = table(None, ("workload", "target", *columns), right=("trials", "best"))
    narrow = table(None, ("id", *columns), right=("id", "trials", "best"), wrap=False)
    notes = []
    for i, w in enumerate(view.workloads):
        best = w.best_so_far()[-1] if w.costs else None
        shown = fixed(best, decimals=8 if w.unit == "ms" else 4) if best is not None else None
        numbers = (str(len(w.costs)), ", ".join(f"{k} {v}" for k, v in w.errors.most_common()) or "-",
                   f"{shown} {w.unit}" if shown is not None else "-")
        wide.add_row(w.label, w.target, *numbers)
        narrow.add_row(str(i), *numbers)
        notes.append(f"[{i}] {w.label} on {w.target}")
    print_fitted(app.console, wide, lambda: narrow, lambda: notes)
    if any(y is not None for w in view.workloads for y in w.best_so_far()):
        try:
            app.echo(text_plot(view, app.console.is_terminal, width=min(app.console.width, 120) - 2))
        except PlottingUnavailable as err:
            app.warn(f"{err}; the summary above is complete")


def _path_param() -> click.Parameter:
    return next(p for p in click.get_current_context().command.params if p.name == "path")


@click.command()
@click.argument("path", type=click.Path(exists=True, dir_okay=False))
@click.option("--task", type=click.IntRange(min=0), help="Job: only this task (0-based).")
@click.option("--config", type=click.IntRange(min=0),
              help="Job: also print the loop nest of this config index.")
@click.option("--png", type=click.Path(dir_okay=False), help="Log: also write the convergence plot as PNG.")
@click.option("--json", "as_json", is_flag=True, help="Log or model job: print the summary as JSON.")
@click.pass_obj
def inspect(app: App, path: str, task: int | None, config: int | None, png: str | None,
            as_json: bool) -> None:
    """Inspect a job file (PATH.yaml) or a tuning log (any other PATH, or a .yaml log).

    For a job: the config space of each task, printed as ``print(task.config_space)`` does,
    and with --config the lowered loop nest of that config; for a model job: the tasks of its
    network (each operator's calls and share of FLOPs, its tasks: a convolution's direct and Winograd
    tasks are alternatives of one operator, marked alt), its fused kernels, the executor's intermediate
    memory, the weights' size and where each task's config came from (log, package, nearest record,
    default; the network built with the job's log when it exists), with --task or --config its
    tasks' spaces, numbered as tune numbers them. For a log: records, errors by kind,
    the best result per workload and its convergence over the trials (a trial is a config, at
    its lowest time however often it was measured).
    """
    is_job = is_job_file(path)  # a log named .yaml is inspected as a log
    if is_job and png:
        raise click.UsageError("--png applies to logs, not to job files")
    if not is_job and (task is not None or config is not None):
        raise click.UsageError("--task and --config apply to job files (.yaml), not to logs")
    if is_job:
        with StepView(app, "inspect") as steps:
            found = inspect_job_file(path, task=task, config=config, on_step=steps)
        if isinstance(found, NetworkView):
            if as_json:
                app.echo(json.dumps(found.as_dict(), indent=2))
            else:
                _render_network(app, found)
        elif as_json:
            raise click.UsageError("--json applies to logs and model jobs, not to jobs of tasks")
        else:
            _render_tasks(app, found)
        return
    readable_logs(click.get_current_context(), _path_param(), path)
    if png:
        require("matplotlib", "inspect --png")  # before reading the log
    view = inspect_log(path)
    if as_json:
        app.echo(json.dumps(dict(view.as_dict(), png=png), indent=2))
    else:
        _render_log(app, view)
    if png:
        write_png(view, png)
        if not as_json:
            app.echo(f"wrote {png}")
