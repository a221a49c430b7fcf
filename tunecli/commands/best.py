"""``tunecli best``: the best configs per workload of one or more tuning logs."""

from __future__ import annotations

import json

import click
from rich.table import Table

from tunecli.commands.app import App, option_hint
from tunecli.engine.job.best_of_logs import BestReport, best_of_logs
from tunecli.errors import LogInUseError


def _table(report: BestReport) -> Table:
    table = Table(title=f"{report.records} records ({report.errors} errors) in {', '.join(report.logs)}")
    for name in ("workload", "target", "#", "GFLOPS", "time (ms)", "config"):
        table.add_column(name, justify="right" if name in ("#", "GFLOPS", "time (ms)") else "left",
                         overflow="fold")
    for w in report.workloads:
        if not w.best:
            table.add_row(w.workload, w.target, "-", "-", "-", f"no valid record ({w.errors} errors)")
        for e in w.best:
            table.add_row(w.workload if e.rank == 1 else "", w.target if e.rank == 1 else "", str(e.rank),
                          f"{e.gflops:.2f}" if e.gflops is not None else "-", f"{e.cost * 1e3:.4f}",
                          e.config)
    return table


@click.command()
@click.argument("logs", nargs=-1, required=True, type=click.Path(exists=True, dir_okay=False))
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
    app.console.print(_table(report))
    if report.written:
        app.echo(f"wrote {sum(len(w.best) for w in report.workloads)} records to {report.written}")
