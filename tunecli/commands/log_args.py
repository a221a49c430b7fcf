"""Command-line arguments that name tuning logs to read: checked before any work starts."""

from __future__ import annotations

import click

from tunecli.engine.job.yaml_document import looks_like_a_log
from tunecli.engine.log.log_files import check_log_file
from tunecli.errors import RecordError

_JOB_SUFFIXES = (".yaml", ".yml")
#: Bytes read from the start of a ``.yaml`` argument to tell a job file from a log named so.
_SNIFF_BYTES = 64 * 1024


def readable_logs(ctx: click.Context, param: click.Parameter,
                  value: str | tuple[str, ...] | None) -> str | tuple[str, ...] | None:
    """Click callback: each log named by ``value`` (a path or a tuple of paths) is a readable file.

    A directory, a FIFO or a device, or a file this process may not read, is a usage error
    (exit code 2) naming the path, as a missing file is; so is a job file (``.yaml`` whose first
    line that is not blank or a comment is not a record), with the commands that take it.
    """
    for path in value if isinstance(value, tuple) else (value,) if value is not None else ():
        try:
            check_log_file(path)
        except RecordError as err:
            raise click.BadParameter(str(err), ctx=ctx, param=param) from None
        if is_job_file(path):
            raise click.BadParameter(
                f"{path}: is a job file, not a tuning log: `tunecli tune {path}` tunes it into its log "
                f"(the job's `log:`, by default logs/<name>.log), which `tunecli best` reads and "
                f"`tunecli apply {path}` applies", ctx=ctx, param=param)
    return value


def is_job_file(path: str) -> bool:
    """True when ``path`` is named as a job file (``.yaml``, ``.yml``) and does not start as a
    log does (its first line that is not blank or a comment a tuning record)."""
    if not path.lower().endswith(_JOB_SUFFIXES):
        return False
    try:
        with open(path, "rb") as f:
            head = f.read(_SNIFF_BYTES)
    except OSError:  # not readable: the job reader says why
        return True
    return not looks_like_a_log(head.decode("utf-8", errors="replace"))
