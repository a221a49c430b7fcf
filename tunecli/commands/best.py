"""``tunecli best``: the best configs per workload of one or more tuning logs."""

from __future__ import annotations

import json
import textwrap

import click

from tunecli.commands.app import App, option_hint
from tunecli.commands.log_args import readable_logs
from tunecli.commands.tables import fixed, print_fitted, table
from tunecli.engine.log.best_of_logs import BestReport, best_of_logs
from tunecli.errors import LogInUseError

_NUMBERS = ("#", "GFLOPS", "time (ms)")


def _print_report(app: App, report: BestReport) -> None:
    title = f"{report.records} records ({report.errors} errors) in {', '.join(report.logs)}"
    wide = table(title, ("workload", "target", *_NUMBERS, "config"), right=_NUMBERS)
    narrow = table(title, ("id", *_NUMBERS), right=("id", *_NUMBERS), wrap=False)
    notes = []
    for i, w in enumerate(report.workloads):
        notes.append(f"[{i}] {w.workload} on {w.target}")
        if not w.best:
            wide.add_row(w.workload, w.target, "-", "-", "-", f"no valid record ({w.errors} errors)")
            narrow.add_row(str(i), "-", "-", "-")
            notes.append(f"[{i}] no valid record ({w.errors} errors)")
        for e in w.best:
            gflops = fixed(e.gflops, decimals=2) if e.gflops is not None else "-"
            numbers = (str(e.rank), gflops, fixed(e.cost * 1e3, decimals=8))
            first = e.rank == 1
            config = e.config + (" (untuned)" if e.untuned else "")
            wide.add_row(w.workload if first else "", w.target if first else "", *numbers, config)
            narrow.add_row(str(i) if first else "", *numbers)
            notes.append(f"[{i}] #{e.rank}: {config}")
    print_fitted(app.console, wide, lambda: narrow, lambda: notes)
    for i, w in enumerate(report.workloads):  # said unless apply builds the first row, as plain as it reads
        first = w.best[0] if w.best else None
        plain = first is not None and w.chosen == first.index and (
            first.untuned is not None or w.why == "the fastest record")
        if w.why is not None and not plain:
            app.echo(f"[{i}] apply builds config {w.chosen}:")
            app.echo(f"  {w.why}")
        if w.stale is not None:
            for line in textwrap.wrap(f"[{i}] {w.stale}; `tunecli tune` measures today's untuned config",
                                      app.console.width, subsequent_indent="  ", break_long_words=False):
                app.echo(line)


@click.command()
@click.argument("logs", nargs=-1, required=True, type=click.Path(exists=True, dir_okay=False),
                callback=readable_logs)
@click.option("-k", "--top", default=1, show_default=True, type=click.IntRange(min=1),
              help="Configs to show per workload.")
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
@click.option("-o", "--output", type=click.Path(dir_okay=False),
              help="Write the records shown to this log (for `tunecli apply`).")
@click.pass_obj
def best(app: App, logs: tuple[str, ...], top: int, as_json: bool, output: str | None) -> None:
    """Show the best config of every workload in LOGS (tunecli's or TVM's logs).

    GFLOPS are shown where the workload's template is known (built-in templates); other
    workloads show their time only.
    """
    with option_hint(LogInUseError, "-o PATH"):
        report = best_of_logs(list(logs), top=top, out=output)
    if as_json:
        app.echo(json.dumps(report.as_dict(), indent=2))
        return
    _print_report(app, report)
    if report.written:
        app.echo(f"wrote {sum(len(w.best) for w in report.workloads)} records to {report.written}")
