"""Persistent worker processes: spawned once, called many times, replaced when they die or hang.

A kernel that segfaults or loops forever, or an LLVM assertion that aborts, must only take down
a child process, and llvmlite leaks memory with every compile, so builds and measurements run
in :class:`Worker` children started with the ``spawn`` method (a fresh interpreter: no state
inherited from the tuner; the user's ``__main__`` script is deliberately not re-imported).

Protocol over one duplex pipe per child::

    child  → parent   ("ready", pid)                 after importing the ``preload`` modules
    parent → child    (func_ref, payload)            func_ref is "package.module:function"
    child  → parent   ("ok", value) | ("raised", traceback text)

A call's timeout starts when the job is handed to a ready child, so start-up (the child's
imports) never counts against it. The parent closes its copy of the child's pipe end, so a
child that dies is seen as EOF within milliseconds. After a death, a timeout (the child is
SIGKILLed) or ``max_jobs`` calls, the child is replaced by a fresh one, started at once so it
warms up while the caller does other work. Children ignore SIGINT (the parent decides) and
ask Linux to kill them when their parent exits.
"""

from __future__ import annotations

import contextlib
import ctypes
import importlib
import multiprocessing
import os
import signal
import sys
import time
import traceback
import types
import weakref
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from enum import IntEnum
from multiprocessing.connection import Connection
from typing import Any

#: Seconds a fresh child may take to import its ``preload`` modules and report ready.
STARTUP_TIMEOUT = 60.0
_PR_SET_PDEATHSIG = 1


class CallStatus(IntEnum):
    """How a call in a worker ended."""

    OK = 0  #: the function returned; ``value`` holds its result
    RAISED = 1  #: the function raised; ``detail`` holds the traceback
    DIED = 2  #: the child exited (signal, abort, exit) before answering
    TIMEOUT = 3  #: the call ran past its timeout; the child was killed


@dataclass(frozen=True)
class CallOutcome:
    """The result of one call in a worker.

    Attributes
    ----------
    status : CallStatus
    value : object
        The function's return value (``status == OK``), else None.
    detail : str
        Traceback (RAISED), how the child ended (DIED) or the timeout (TIMEOUT).
    elapsed : float
        Seconds from handing the job to a ready child until the outcome was known.
    """

    status: CallStatus
    value: Any = None
    detail: str = ""
    elapsed: float = 0.0


def _child_main(conn: Connection, parent_pid: int, preload: Sequence[str]) -> None:
    """Body of a worker child: import ``preload``, then serve calls until EOF."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        ctypes.CDLL(None).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):
        pass
    if os.getppid() != parent_pid:
        return
    for name in preload:
        importlib.import_module(name)
    funcs: dict[str, Callable[[object], object]] = {}
    conn.send(("ready", os.getpid()))
    while True:
        try:
            func_ref, payload = conn.recv()
        except (EOFError, OSError):
            return
        try:
            func = funcs.get(func_ref)
            if func is None:
                module_name, _, attr = func_ref.partition(":")
                func = funcs[func_ref] = getattr(importlib.import_module(module_name), attr)
            reply = ("ok", func(payload))
        except Exception:  # noqa: BLE001 - reported to the parent, which decides what it means
            reply = ("raised", traceback.format_exc())
        try:
            conn.send(reply)
        except Exception:  # noqa: BLE001 - an unpicklable result is the function's failure
            conn.send(("raised", traceback.format_exc()))


@contextlib.contextmanager
def _main_module_hidden() -> Iterator[None]:
    """Start children without re-running the user's ``__main__`` script in them.

    ``spawn`` re-imports the parent's main module in every child; a script that tunes at top
    level (as TVM's tutorials do, with no ``if __name__ == "__main__"`` guard) would then start
    tuning again inside each worker, and a script read from stdin cannot be re-imported at all.
    Workers need nothing from ``__main__``: templates defined there travel by value with the task.
    """
    main = sys.modules.get("__main__")
    sys.modules["__main__"] = types.ModuleType("__main__")
    try:
        yield
    finally:
        if main is not None:
            sys.modules["__main__"] = main


def _reap(proc: multiprocessing.process.BaseProcess, conn: Connection) -> None:
    """Close ``conn`` and kill and join ``proc`` (also used as a finalizer)."""
    conn.close()
    if proc.is_alive():
        proc.kill()
    proc.join(5.0)


class Worker:
    """One persistent child process that runs ``module:function`` calls with a timeout.

    Parameters
    ----------
    max_jobs : int, optional
        Replace the child after this many calls (bounds leaks such as LLVM's memory kept per
        compile); None never recycles.
    preload : sequence of str
        Modules the child imports before reporting ready.
    name : str
        Name of the child's ``multiprocessing.Process``.
    startup_timeout : float
        Seconds a fresh child may take to become ready.
    keeps_state : bool
        The child holds state between calls (a remote session's libraries and arrays): a child
        that died after answering calls makes the next call end DIED instead of running in a
        fresh child that lacks that state.  Without it, a child that died between calls is
        replaced silently.

    Examples
    --------
    >>> w = Worker(preload=["math"])
    >>> w.call("math:sqrt", 16.0, timeout=5.0).value
    4.0
    >>> w.close()
    """

    def __init__(self, max_jobs: int | None = None, preload: Sequence[str] = (),
                 name: str = "tunecli-worker", startup_timeout: float = STARTUP_TIMEOUT,
                 keeps_state: bool = False) -> None:
        self.max_jobs = max_jobs
        self.keeps_state = keeps_state
        self.preload = tuple(preload)
        self.name = name
        self.startup_timeout = startup_timeout
        self.jobs_done = 0  #: calls answered by the current child
        self.restarts = 0  #: children replaced after a death, timeout or recycling
        self._ctx = multiprocessing.get_context("spawn")
        self._proc: multiprocessing.process.BaseProcess | None = None
        self._conn: Connection | None = None
        self._finalizer: weakref.finalize | None = None
        self._ready = False
        self._started_at = 0.0
        self._job: tuple[str, object] | None = None
        self._timeout = 0.0
        self._sent_at: float | None = None
        self._lost: str | None = None  #: how a child holding state died between calls

    # ------------------------------------------------------------------ lifecycle
    def start(self) -> None:
        """Start a child unless one is alive (returns at once; the child warms up meanwhile)."""
        if self._proc is not None and self._proc.is_alive():
            return
        self._discard()
        parent_conn, child_conn = self._ctx.Pipe()
        proc = self._ctx.Process(target=_child_main, args=(child_conn, os.getpid(), self.preload),
                                 name=self.name, daemon=True)
        with _main_module_hidden():
            proc.start()
        child_conn.close()  # so that the parent sees EOF as soon as the child dies
        self._proc, self._conn, self._ready = proc, parent_conn, False
        self._started_at = time.perf_counter()
        self.jobs_done = 0
        self._finalizer = weakref.finalize(self, _reap, proc, parent_conn)

    def close(self) -> None:
        """Stop the child (a pending call is abandoned)."""
        self._job = None
        self._sent_at = None
        self._lost = None
        self._discard()

    def _discard(self) -> None:
        if self._finalizer is not None:
            self._finalizer()  # closes the pipe, kills and joins the child
        self._proc, self._conn, self._finalizer, self._ready = None, None, None, False

    def _replace(self) -> None:
        self.restarts += 1
        self._discard()
        self.start()

    # ------------------------------------------------------------------ state
    @property
    def pid(self) -> int | None:
        """Process id of the current child (None when none is running)."""
        return self._proc.pid if self._proc is not None else None

    @property
    def busy(self) -> bool:
        """True while a submitted call has no outcome yet."""
        return self._job is not None

    @property
    def connection(self) -> Connection | None:
        """The parent's pipe end, for :func:`multiprocessing.connection.wait`."""
        return self._conn

    def seconds_left(self) -> float:
        """Seconds until the pending call (or the child's start-up) is overdue."""
        if self._sent_at is not None:
            return self._sent_at + self._timeout - time.perf_counter()
        return self._started_at + self.startup_timeout - time.perf_counter()

    # ------------------------------------------------------------------ calls
    def submit(self, func_ref: str, payload: object, timeout: float) -> None:
        """Hand ``func_ref(payload)`` to the child; collect the outcome with :meth:`poll`.

        Parameters
        ----------
        func_ref : str
            ``"package.module:function"``, imported in the child.
        payload : object
            The function's one (picklable) argument.
        timeout : float
            Seconds the call may run once the child is ready.
        """
        if self._job is not None:
            raise RuntimeError(f"worker {self.name}: submit() while a call is pending")
        if self.keeps_state and self.jobs_done and self._proc is not None and not self._proc.is_alive():
            # the state earlier calls left in the child is gone: this call must not run in a fresh one
            self._job, self._timeout, self._sent_at = (func_ref, payload), float(timeout), None
            self._lost = f"{self._how_it_died()} after its last call"
            return
        self.start()
        self._job, self._timeout, self._sent_at = (func_ref, payload), float(timeout), None
        if self._ready:
            self._send()

    def _send(self) -> None:
        assert self._conn is not None and self._job is not None
        self._sent_at = time.perf_counter()
        try:
            self._conn.send(self._job)
        except OSError:
            pass  # the child is gone: poll() sees EOF and reports DIED

    def poll(self, wait_s: float = 0.0) -> CallOutcome | None:
        """Return the pending call's outcome, waiting up to ``wait_s`` seconds; None if not yet.

        A child that died or is overdue is replaced and the call reported as DIED / TIMEOUT.
        """
        if self._job is None:
            return None
        if self._lost is not None:
            lost, self._lost = self._lost, None
            return self._finish(CallStatus.DIED, lost)
        assert self._conn is not None
        end = time.perf_counter() + max(wait_s, 0.0)
        while True:
            try:
                if self._conn.poll(max(0.0, min(end - time.perf_counter(), self.seconds_left()))):
                    kind, value = self._conn.recv()
                    if kind == "ready":
                        self._ready = True
                        self._send()
                        continue
                    return self._finish(CallStatus.OK if kind == "ok" else CallStatus.RAISED, value)
            except (EOFError, OSError):
                return self._finish(CallStatus.DIED, self._how_it_died())
            except Exception:  # noqa: BLE001 - a reply this process cannot unpickle
                return self._finish(CallStatus.RAISED, "the reply could not be unpickled:\n"
                                    + traceback.format_exc())
            if self.seconds_left() <= 0.0:
                if self._sent_at is None:
                    return self._finish(CallStatus.DIED, f"worker did not start within "
                                                         f"{self.startup_timeout:g} s")
                return self._finish(CallStatus.TIMEOUT, f"call did not finish within {self._timeout:g} s")
            if time.perf_counter() >= end:
                return None

    def call(self, func_ref: str, payload: object, timeout: float) -> CallOutcome:
        """Run ``func_ref(payload)`` in the child and wait for its outcome (see :meth:`submit`).

        If the wait is interrupted (KeyboardInterrupt), the child is stopped before re-raising,
        so the worker is usable again.
        """
        self.submit(func_ref, payload, timeout)
        try:
            while True:
                outcome = self.poll(max(self.seconds_left(), 0.0) + 0.05)
                if outcome is not None:
                    return outcome
        except BaseException:
            self.close()
            raise

    def _how_it_died(self) -> str:
        assert self._proc is not None
        self._proc.join(1.0)
        code = self._proc.exitcode
        if code is not None and code < 0:
            return f"worker process {self._proc.pid} was killed by {signal.Signals(-code).name}"
        return f"worker process {self._proc.pid} exited with code {code}"

    def _finish(self, status: CallStatus, value: object) -> CallOutcome:
        elapsed = time.perf_counter() - self._sent_at if self._sent_at is not None else 0.0
        self._job, self._sent_at = None, None
        if status in (CallStatus.DIED, CallStatus.TIMEOUT):
            self._replace()
            return CallOutcome(status, None, value, elapsed)
        self.jobs_done += 1
        if self.max_jobs is not None and self.jobs_done >= self.max_jobs:
            self._replace()
        if status is CallStatus.RAISED:
            return CallOutcome(status, None, value, elapsed)
        return CallOutcome(status, value, "", elapsed)

