"""Command-line arguments that name tuning logs to read: checked before any work starts."""

from __future__ import annotations

import click

from tunecli.engine.log.log_files import check_log_file
from tunecli.errors import RecordError


def readable_logs(ctx: click.Context, param: click.Parameter,
                  value: str | tuple[str, ...] | None) -> str | tuple[str, ...] | None:
    """Click callback: each log named by ``value`` (a path or a tuple of paths) is a readable file.

    A directory, a FIFO or a device, or a file this process may not read, is a usage error
    (exit code 2) naming the path, as a missing file is.
    """
    for path in value if isinstance(value, tuple) else (value,) if value is not None else ():
        try:
            check_log_file(path)
        except RecordError as err:
            raise click.BadParameter(str(err), ctx=ctx, param=param) from None
    return value
