"""What every command shares: the application object, error handling and exit codes.

Exit codes (documented in the README):

==== =========================================================
0    success
1    tuning failed (a task has no valid config) or an engine error
2    bad job file or bad command-line usage
130  interrupted (Ctrl-C); finished measurements are in the log
==== =========================================================
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import sys
import traceback
from collections.abc import Callable, Iterator
from types import FrameType
from typing import Any

import click
from rich.console import Console

from tunecli.engine.rpc.sockets import parse_host_port
from tunecli.errors import JobError, TuneError

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130
#: Width of output written to a file or a pipe (tables fit it; COLUMNS overrides it).
PIPE_WIDTH = 80


class App:
    """State shared by the commands of one invocation (``@click.pass_obj``).

    Parameters
    ----------
    verbose : bool
        Show tracebacks and debug logging.
    """

    def __init__(self, verbose: bool = False) -> None:
        self.verbose = verbose
        self.console = _console(stderr=False)
        self.err = _console(stderr=True)

    def echo(self, text: str = "") -> None:
        """Print plain text to stdout (no markup, no wrapping)."""
        click.echo(text)

    def warn(self, text: str) -> None:
        """Print a warning to stderr."""
        click.echo(f"warning: {text}", err=True)


def _console(stderr: bool) -> Console:
    """A rich console; output to a file or pipe gets PIPE_WIDTH columns (unless COLUMNS is set)."""
    console = Console(stderr=stderr, highlight=False)
    if not console.is_terminal and "COLUMNS" not in os.environ:
        console = Console(stderr=stderr, highlight=False, width=PIPE_WIDTH)
    return console


class _WarningHandler(logging.Handler):
    """Prints the engine's log warnings as ``warning: ...`` lines on stderr."""

    def emit(self, record: logging.LogRecord) -> None:
        prefix = "warning: " if record.levelno >= logging.WARNING else ""
        click.echo(prefix + record.getMessage(), err=True)


def configure_logging(verbose: bool) -> Callable[[], None]:
    """Route the engine's loggers to stderr; return a function that undoes it.

    Only the command layer configures handlers; undoing keeps an in-process caller (tests,
    ``CliRunner``) with the logging it had.
    """
    saved = []
    for name in ("autotvm", "tunecli"):
        logger = logging.getLogger(name)
        handler = _WarningHandler()
        saved.append((logger, handler, logger.level, logger.propagate))
        logger.addHandler(handler)
        logger.setLevel(logging.DEBUG if verbose else logging.WARNING)
        logger.propagate = False

    def restore() -> None:
        for logger, handler, level, propagate in saved:
            logger.removeHandler(handler)
            logger.setLevel(level)
            logger.propagate = propagate

    return restore


class TuneGroup(click.Group):
    """A click group that turns tunecli's errors into messages and exit codes."""

    def invoke(self, ctx: click.Context) -> Any:  # Any: click's signature (a command's return value)
        try:
            return super().invoke(ctx)
        except TuneError as err:
            notes = getattr(err, "__notes__", ())
            # a job's problems are listed one per line, like a compiler's errors
            problems = (err.problems if isinstance(err, JobError) else ()) or (str(err),)
            lines = [f"error: {problem}" for problem in problems]
            lines[-1] += f" ({'; '.join(notes)})" if notes else ""
            _report(ctx, "\n".join(lines))
            ctx.exit(EXIT_USAGE if isinstance(err, JobError) else EXIT_FAILED)
        except BrokenPipeError:  # the reader of the output has gone (`tunecli best x.log | head`)
            _discard_stdout()
            ctx.exit(EXIT_FAILED)
        except OSError as err:  # a log or export path that cannot be written, a full disk
            _report(ctx, f"error: {err}")
            ctx.exit(EXIT_FAILED)
        except KeyboardInterrupt:
            _report(ctx, "interrupted")
            ctx.exit(EXIT_INTERRUPTED)


def _discard_stdout() -> None:
    """Send what is still buffered for stdout nowhere, so that exiting prints no second error."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):  # stdout is not a file (an in-process runner's buffer)
        pass


def _report(ctx: click.Context, message: str) -> None:
    app = ctx.find_object(App)
    if app is not None and app.verbose:
        traceback.print_exc(file=sys.stderr)
    click.echo(message, err=True)


@contextlib.contextmanager
def option_hint(error: type[TuneError], hint: str) -> Iterator[None]:
    """Name the command-line option that addresses errors of type ``error`` raised inside.

    Engine messages describe a problem in engine terms (a log path, a token); the hint, added
    as a note, is printed after the message in parentheses.

    Parameters
    ----------
    error : type
        A TuneError subclass.
    hint : str
        E.g. ``"--log PATH"``.
    """
    try:
        yield
    except error as err:
        err.add_note(hint)
        raise


def raise_interrupt(signum: int, frame: FrameType | None) -> None:
    """A signal handler that interrupts as Ctrl-C does (``KeyboardInterrupt``)."""
    raise KeyboardInterrupt


@contextlib.contextmanager
def sigterm_interrupts() -> Iterator[None]:
    """Within the block, SIGTERM (``kill``) interrupts as Ctrl-C does: ``finally`` blocks run
    (temporary files removed, worker processes closed) and the command exits with code 130."""
    old = signal.signal(signal.SIGTERM, raise_interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, old)


def fail(message: str, code: int = EXIT_FAILED) -> None:
    """Print ``error: message`` and exit with ``code`` (for outcomes, not exceptions)."""
    click.echo(f"error: {message}", err=True)
    click.get_current_context().exit(code)


def host_port(ctx: click.Context, param: click.Parameter, value: str | None) -> tuple[str, int] | None:
    """Click callback parsing ``HOST:PORT`` options."""
    if value is None:
        return None
    try:
        return parse_host_port(value)
    except ValueError as err:
        raise click.BadParameter(str(err)) from None
