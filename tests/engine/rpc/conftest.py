"""Fixtures of the RPC tests: an in-process tracker and device servers in real child processes;
builds of a task's configs for the target of the task."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Iterator

import pytest

from tunecli.engine.measure.builder import BuildResult, LocalBuilder
from tunecli.engine.measure.result import MeasureInput, MeasureResult
from tunecli.engine.rpc.protocol import RPC_TRACKER_MAGIC, pack_int, recv_int
from tunecli.engine.rpc.tracker import Tracker
from tunecli.engine.task.task import Task

SERVER_CODE = """
import sys
from tunecli.engine.rpc.server import run_server
tracker = None if sys.argv[1] == "-" else ("127.0.0.1", int(sys.argv[1]))
run_server(tracker, sys.argv[2], host="127.0.0.1", port=0, port_end=0, token=sys.argv[3] or "",
           ping_period=0.3, unmatch_timeout=1.0, retry_period=0.3, idle_timeout=30.0,
           on_ready=lambda host, port: print(port, flush=True))
"""

TRACKER_CODE = """
import sys
from tunecli.engine.rpc.tracker import run_tracker
run_tracker("127.0.0.1", 0, 0, token=sys.argv[1] or "", on_ready=lambda h, p: print(p, flush=True))
"""


class Proc:
    """A child process started by a test, with the port it printed on start-up."""

    def __init__(self, popen: subprocess.Popen, port: int) -> None:
        self.popen = popen
        self.port = port

    def kill(self) -> None:
        """SIGKILL the process and reap it."""
        if self.popen.poll() is None:
            self.popen.send_signal(signal.SIGKILL)
        self.popen.wait(10)


def _start(code: str, args: list[str]) -> Proc:
    env = dict(os.environ)
    env.pop("TUNECLI_RPC_TOKEN", None)
    popen = subprocess.Popen([sys.executable, "-c", code, *args], stdout=subprocess.PIPE, env=env,
                             stdin=subprocess.DEVNULL, text=True)
    line = popen.stdout.readline()
    if not line.strip().isdigit():
        popen.kill()
        popen.wait(10)
        raise RuntimeError(f"child process did not report its port (got {line!r})")
    return Proc(popen, int(line))


@pytest.fixture
def procs() -> Iterator[Callable[..., Proc]]:
    """Start servers/trackers in child processes; every one is killed at the end of the test.

    ``procs(key, tracker_port, token)`` starts a server, ``procs.tracker(token)`` a tracker and
    ``procs.child(code, args)`` runs Python ``code`` that prints its port first.
    """
    started: list[Proc] = []

    def start_server(key: str, tracker_port: int | None = None, token: str = "") -> Proc:
        proc = _start(SERVER_CODE, ["-" if tracker_port is None else str(tracker_port), key, token])
        started.append(proc)
        return proc

    def start_tracker(token: str = "") -> Proc:
        proc = _start(TRACKER_CODE, [token])
        started.append(proc)
        return proc

    def start_child(code: str, args: list[str]) -> Proc:
        proc = _start(code, args)
        started.append(proc)
        return proc

    start_server.tracker = start_tracker  # type: ignore[attr-defined]
    start_server.child = start_child  # type: ignore[attr-defined]
    yield start_server
    for proc in started:
        proc.kill()


@pytest.fixture
def tracker() -> Iterator[Tracker]:
    """An in-process tracker on a free loopback port, without token."""
    trk = Tracker("127.0.0.1", 0, 0, token="")
    yield trk
    trk.stop()


def wait_for(predicate: Callable[[], bool], timeout: float = 10.0, what: str = "condition") -> None:
    """Poll ``predicate`` every 50 ms; fail the test after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


def free_servers(trk: Tracker, key: str) -> int:
    """Number of free slots of ``key`` in the tracker's queue."""
    return trk.summary()["queue_info"].get(key, {}).get("free", 0)


def raw_tracker_conn(port: int) -> socket.socket:
    """A TVM-style raw connection to a tracker, magic exchanged."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=5)
    sock.sendall(pack_int(RPC_TRACKER_MAGIC))
    assert recv_int(sock) == RPC_TRACKER_MAGIC
    return sock


def build_configs(task: Task, indices: Iterable[int],
                  timeout: float = 60) -> list[BuildResult | MeasureResult]:
    """The configs ``indices`` of ``task`` built by a one-worker LocalBuilder for the task's target."""
    builder = LocalBuilder(timeout=timeout, n_parallel=1)
    try:
        builder.set_task(task)
        return builder.build([MeasureInput(task.target, task, task.config_space.get(i)) for i in indices])
    finally:
        builder.close()
