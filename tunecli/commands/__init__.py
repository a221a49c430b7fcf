"""The ``tunecli`` command group: registers one command per module."""

from __future__ import annotations

import click

from tunecli.commands.app import App, TuneGroup, configure_logging
from tunecli.commands.apply import apply
from tunecli.commands.best import best
from tunecli.commands.inspect import inspect
from tunecli.commands.query import query
from tunecli.commands.server import server
from tunecli.commands.tracker import tracker
from tunecli.commands.tune import tune


@click.group(cls=TuneGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.option("-v", "--verbose", is_flag=True, help="Show debug logging and tracebacks of errors.")
@click.version_option(package_name="tunecli")
@click.pass_context
def cli(ctx: click.Context, verbose: bool) -> None:
    """tunecli: tune tensor kernels AutoTVM-style, from YAML job files.

    Exit codes: 0 ok, 1 tuning failed or engine error, 2 bad job file or usage, 130 interrupted.
    """
    ctx.call_on_close(configure_logging(verbose))
    ctx.obj = App(verbose)


for _command in (tune, best, apply, inspect, tracker, server, query):
    cli.add_command(_command)


def main() -> None:
    """Entry point of the ``tunecli`` script."""
    cli(prog_name="tunecli")
