"""``tunecli apply``: build a job's tasks (or its network) with their best configs, check and benchmark
them."""

from __future__ import annotations

import json

import click

from tunecli.commands.app import EXIT_USAGE, App, fail, sigterm_interrupts
from tunecli.commands.log_args import readable_logs
from tunecli.commands.steps import StepView
from tunecli.commands.tables import fixed, print_fitted, table
from tunecli.engine.actions.apply_kernels import AppliedTask, ApplyReport
from tunecli.engine.actions.apply_network import NetworkApplyReport
from tunecli.engine.actions.job_file import apply_job_file
from tunecli.engine.codegen import kernel_cache
from tunecli.engine.measure.time_stats import TimeStats, significant_digits
from tunecli.errors import RecordError


def _ms(seconds: float | None, stats: TimeStats | None = None) -> str:
    """Milliseconds with 4 decimals, fewer where the rounds' spread (``stats``) supports fewer digits."""
    if seconds is None:
        return "-"
    if stats is None:
        return f"{seconds * 1e3:.4f}"
    return fixed(seconds * 1e3, significant_digits(stats), 4)


def _ratio(num: float | None, den: float | None) -> str:
    return f"{num / den:.2f}x" if num and den else "-"


def _few_digits(value: float, four_decimals: bool, digits: int = 8) -> str:
    """``value`` in at most 6 characters below 10**6: fewer decimals the larger it is, and at most
    ``digits`` significant digits."""
    decimals = (4 if four_decimals else 2) if value < 10 else 2 if value < 100 else 1 if value < 1000 else 0
    return fixed(value, digits, decimals)


def _short_ms(seconds: float | None, stats: TimeStats | None = None) -> str:
    """``_ms`` for the narrow table: a slow time (numpy's on a busy machine) keeps its whole value."""
    return _few_digits(seconds * 1e3, True, significant_digits(stats, 8)) if seconds is not None else "-"


def _short_ratio(num: float | None, den: float | None) -> str:
    return f"{_few_digits(num / den, four_decimals=False)}x" if num and den else "-"


def _spread(stats: TimeStats | None) -> str:
    """The rounds' interquartile range over their median (``-`` for one round or none)."""
    return f"{stats.spread:.0%}" if stats is not None and stats.rounds > 1 else "-"


def _numpy_caption(report: ApplyReport) -> str | None:
    """What the numpy column timed (the float64 reference is for the check only)."""
    kinds = sorted({t.numpy_baseline for t in report.tasks if t.numpy_baseline and t.numpy is not None})
    if not kinds:
        return None
    return (f"numpy: numpy computing the operator in the kernel's dtype ({'; '.join(kinds)}), in a worker "
            "process of its own, timed in turn with the kernels; the float64 reference only checks answers")


_NUMBERS = ("tuned ms", "spread", "log ms", "vs log", "GFLOPS", "untuned ms", "speedup", "numpy ms",
            "vs numpy")
_SHORT = ("tuned", "spread", "vs log", "untuned", "speedup", "numpy", "vs np")  # fits 80 columns


def _with_fastest(text: str, t: AppliedTask, stats: TimeStats | None) -> str:
    """``text`` (a median) with the fastest round beside it where the task's median is uncertain: to
    the median's digits, at least two (the fastest round repeats better than a disturbed median)."""
    if not t.uncertain or stats is None or stats.rounds < 2 or text == "-":
        return text
    return f"{text} (fastest {fixed(stats.low * 1e3, max(2, significant_digits(stats)), 4)})"


def _untuned_caption(report: ApplyReport) -> str:
    """What the untuned column timed: the config a build without a log runs, and where it is from."""
    each = [f"task {t.index}: {t.default_source} "
            + ("(the tuned config: timed once)" if t.default_config == t.config else str(t.default_config))
            for t in report.tasks if t.default_source is not None]
    return ("untuned: the config a build without a log runs (a package's record of the workload, else "
            "the nearest package record's config, else the template's default)"
            + (f"; {'; '.join(each)}" if each else ""))


def _check(t: AppliedTask) -> str:
    if t.error is not None:
        return "ERROR"
    if t.correct is None:
        return "-"
    return f"ok ({t.checked_against})" if t.correct else f"WRONG ({t.checked_against}, err {t.max_error:.2g})"


def _print_report(app: App, report: ApplyReport) -> None:
    title = f"{report.job}: best configs of {report.log} on {report.target}"
    wide = table(title, ("task", "workload", "check", *_NUMBERS, "config"), right=("task", *_NUMBERS))
    narrow = table(title, ("task", "check", *_SHORT), right=("task", *_SHORT), wrap=False)
    notes = []
    for t in report.tasks:
        tuned = _with_fastest(_ms(t.tuned, t.tuned_stats), t, t.tuned_stats)
        spread, vs_log = _spread(t.tuned_stats), _ratio(t.tuned, t.log_time)
        default = _with_fastest(_ms(t.default, t.default_stats), t, t.default_stats)
        numpy = _with_fastest(_ms(t.numpy, t.numpy_stats), t, t.numpy_stats)
        speedup, vs_numpy = _ratio(t.default, t.tuned), _ratio(t.numpy, t.tuned)
        gflops = fixed(t.gflops, significant_digits(t.tuned_stats, 8), 2) if t.gflops else "-"
        wide.add_row(str(t.index), t.label, _check(t), tuned, spread, _ms(t.log_time), vs_log,
                     gflops, default, speedup, numpy, vs_numpy, t.config)
        short = (_short_ms(t.tuned, t.tuned_stats), spread, _short_ratio(t.tuned, t.log_time),
                 _short_ms(t.default, t.default_stats), _short_ratio(t.default, t.tuned),
                 _short_ms(t.numpy, t.numpy_stats), _short_ratio(t.numpy, t.tuned))
        narrow.add_row(str(t.index), _check(t).split(" ")[0], *short)
        timed = [f"{who} {text}" for who, text in (("tuned", tuned), ("untuned", default), ("numpy", numpy))
                 if text != "-"]
        fastest = f"; ms: {', '.join(timed)}" if t.uncertain and timed else ""
        notes.append(f"task {t.index}: {t.label}: {t.config}; check: {_check(t)}{fastest}")
    footer = ["times in ms, each the median of the timing rounds, to the digits their spread supports; "
              "spread: the rounds' interquartile range over the median; vs log: the time over the log's "
              "time of the same config"]
    if any(t.uncertain for t in report.tasks):
        footer.append("(fastest x): the fastest round, shown where the machine was busy or the rounds "
                      "disagree (the median is uncertain; the fastest is what the kernel does undisturbed)")
    footer.append(_untuned_caption(report))
    caption = _numpy_caption(report)
    footer += [caption] if caption else []
    print_fitted(app.console, wide, lambda: narrow, lambda: notes, footer=footer)


def _print_network(app: App, report: NetworkApplyReport) -> None:
    title = f"{report.job}: {report.model} with the best configs of {report.log} on {report.target}"
    # short onnxruntime headers ("ort", named in the footer) keep the table within 80 columns
    columns = ("threads", "tuned ms", "spread", "untuned ms", "speedup", "ort ms", "vs ort")
    out = table(title, columns, right=columns, wrap=False)
    for lat in report.latencies:
        out.add_row(str(lat.threads) if lat.threads else "device's", _ms(lat.tuned, lat.tuned_stats),
                    _spread(lat.tuned_stats), _ms(lat.untuned, lat.untuned_stats),
                    _ratio(lat.untuned, lat.tuned), _ms(lat.onnxruntime, lat.onnxruntime_stats),
                    _ratio(lat.onnxruntime, lat.tuned))
    footer = [f"build: {report.summary}; {report.kernels} kernels; built in {report.build_seconds:.1f} s"
              + (f"; graph tuner's choice: {report.graph_log}" if report.graph_log else "")]
    if report.correct is not None:
        footer.append(f"check: {'ok' if report.correct else 'WRONG'} against {report.checked_against} "
                      f"(max error {report.max_error:.2g})")
    footer.append(f"ort: onnxruntime, {report.onnxruntime}")
    if report.device is not None:
        footer.append(f"ran on {report.device}")
    print_fitted(app.console, out, lambda: out, lambda: [], footer=footer)
    if report.export:
        graph = " without the graph tuner's choices" if report.graph_set_back else ""
        tasks = f" with {len(report.reverted)} task(s) set back" if report.reverted or not graph else ""
        kept = {"reverted": f" (the tuned build{graph}{tasks})",
                "untuned": " (the untuned build: the tuned one was slower)"}.get(report.kept, "")
        app.echo(f"wrote {report.export}{kept}")


def _finish_network(report: NetworkApplyReport) -> None:
    if report.error is not None:
        fail(report.error)
    if report.correct is False:
        fail(f"wrong answer from the tuned network (compared with {report.checked_against}, max error "
             f"{report.max_error:.3g})")


@click.command()
@click.argument("job", type=click.Path(exists=True, dir_okay=False))
@click.option("--log", "log", type=click.Path(exists=True, dir_okay=False),
              callback=readable_logs, help="Tuning log with the configs to apply (default: the job's log).")
@click.option("--export", type=click.Path(),
              help="Kernel job: write .o, .ll and .s of each tuned kernel into this directory. Model job: "
                   "write the tuned network as one shared library (path.so).")
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
@click.option("--no-cache", is_flag=True,
              help="Compile every kernel of the network again instead of reading the kernel cache "
                   "(as TUNECLI_NO_CACHE=1).")
@click.pass_obj
def apply(app: App, job: str, log: str | None, export: str | None, as_json: bool, no_cache: bool) -> None:
    """Build every task of JOB with its best config in LOG, check it and benchmark it.

    A model job's network is built with the log's best configs (and the graph tuner's choice
    when the job has one), checked against onnxruntime (ONNX models) or the graph evaluated op
    by op with numpy, and timed on 1 thread and on all cores beside the untuned build and
    onnxruntime.

    Each kernel is checked against the numpy reference (built-in templates, in float64) or the
    untuned config, and timed next to the untuned config (what a build without a log runs: a
    package's record, the nearest record's config, or the template's default) and numpy computing
    the same operator in the kernel's dtype (float32 a @ w.T for dense) with the kernels' thread
    count, in turn, in the worker process that tuning uses. Where the machine was busy or the
    rounds disagree, the fastest round is shown beside each median. Tasks without a record use the
    fallback config, with a warning. A kernel that crashes or hangs is reported for its task and
    the other tasks are still applied. Exit code 1 when a kernel gives a wrong answer, crashes,
    hangs or does not build. Ctrl-C or kill (exit code 130) leaves no export and no temporary
    file.
    """
    try:
        with sigterm_interrupts(), kernel_cache.bypassed(no_cache), StepView(app, "apply") as steps:
            report = apply_job_file(job, log, export=export, on_step=steps)
    except RecordError as err:  # the job's own log cannot be read: not tuned yet, or not a file
        fail(f"{err} (`tunecli tune {job}` writes the job's log; --log PATH names another)", EXIT_USAGE)
    if isinstance(report, NetworkApplyReport):
        if report.check_uninformative:
            app.warn(f"the reference output of {report.model} is nearly constant (its random weights "
                     "let the activations die out), so the output check cannot tell a wrong network")
        if report.graph_log_stale:
            app.warn(f"{report.graph_log} is older than {report.log}: the graph tuner chose from fewer "
                     f"records than the log holds now; run `tunecli tune {job}` again to refresh it")
        if as_json:
            app.echo(json.dumps(report.as_dict(), indent=2))
        else:
            for each in (report, *report.others):  # a text model: one network per sequence length
                _print_network(app, each)
        for each in (report, *report.others):
            for line in each.slower + each.guard + each.notes:
                app.warn(line)
        for each in (report, *report.others):
            _finish_network(each)
        return
    if as_json:
        app.echo(json.dumps(report.as_dict(), indent=2))
    else:
        _print_report(app, report)
        for t in report.tasks:
            for path in t.files:
                app.echo(f"wrote {path}")
        if report.device is None:
            app.echo(f"note: {report.target} does not run on this machine and the job measures no "
                     "device: kernels were built, not run")
        elif not report.runs_here:
            app.echo(f"kernels ran on {report.device}")
    for line in report.notes:
        app.warn(line)
    for t in report.tasks:
        if t.error is not None:
            click.echo(f"error: task {t.index} ({t.label}): {t.error}", err=True)
    wrong = [str(t.index) for t in report.tasks if t.correct is False]
    failed = [str(t.index) for t in report.tasks if t.error is not None]
    problems = []
    if wrong:
        problems.append(f"wrong answer from task {', '.join(wrong)} (compared with its reference)")
    if failed:
        problems.append(f"task {', '.join(failed)} failed to build or run (the other tasks were applied)")
    if problems:
        fail("; ".join(problems))
