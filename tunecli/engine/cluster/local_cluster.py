"""A Ray cluster on this machine: a head and worker nodes, each a ``ray start --block`` process.

For trying cluster tuning on one machine, for the tests and for the benchmarks.  Each node is
started in its own process group by a ``ray start --block`` this object owns, so stopping a
node (or killing it, as a lost machine) ends exactly the processes of that node, never those of
another cluster on the machine.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from tunecli.engine.cluster.cluster_errors import ClusterError

#: Bytes of object store per node (the records and configs exchanged are small).
OBJECT_STORE_BYTES = 100_000_000
#: Seconds a node may take to join.
JOIN_TIMEOUT = 120.0
#: Settings of the head that notice a lost node within a few seconds (Ray's defaults take ~30 s).
FAST_FAILURE_DETECTION = {"RAY_health_check_period_ms": "500", "RAY_health_check_timeout_ms": "1000",
                          "RAY_health_check_failure_threshold": "4", "RAY_health_check_initial_delay_ms": "0"}


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port free on ``host`` now."""
    with socket.socket() as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def descendants(pid: int) -> list[tuple[int, str]]:
    """The processes below ``pid`` now (its children, theirs, ...) as ``(pid, start time)``, as
    ``/proc`` lists them."""
    children: dict[int, list[tuple[int, str]]] = {}
    for entry in os.listdir("/proc") if os.path.isdir("/proc") else ():
        if not entry.isdigit():
            continue
        try:
            fields = _stat_fields(int(entry))
            children.setdefault(int(fields[1]), []).append((int(entry), fields[19]))
        except (OSError, ValueError, IndexError):
            continue
    found, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), ()):
            found.append(child)
            todo.append(child[0])
    return found


def kill_processes(processes: list[tuple[int, str]]) -> None:
    """SIGKILL each ``(pid, start time)`` of :func:`descendants` still running (not a later process
    given the same pid)."""
    for pid, started in processes:
        try:
            if _stat_fields(pid)[19] == started:
                os.kill(pid, signal.SIGKILL)
        except (OSError, IndexError):
            pass


def _stat_fields(pid: int) -> list[str]:
    """The fields of ``/proc/PID/stat`` after the command name (state, parent, ..., start time at 19)."""
    with open(f"/proc/{pid}/stat") as stat:
        return stat.read().rsplit(")", 1)[1].split()


def ray_cli() -> str:
    """The ``ray`` command next to this Python, else the one on PATH."""
    beside = Path(sys.executable).with_name("ray")
    found = str(beside) if beside.exists() else shutil.which("ray")
    if not found:
        raise ClusterError("the `ray` command is not installed: pip install 'tunecli[ray]'")
    return found


@dataclass
class LocalRayCluster:
    """A head and ``ray start`` worker nodes on 127.0.0.1.

    Parameters
    ----------
    resources : dict
        Custom resources every node advertises (e.g. ``{"tunecli-cpu-znver4": 1}``).
    cpus : int
        CPUs each node advertises.
    """

    resources: dict[str, float] = field(default_factory=dict)
    cpus: int = 1
    port: int = 0
    client_port: int = 0
    root: Path | None = None
    nodes: list[subprocess.Popen] = field(default_factory=list)
    names: list[str] = field(default_factory=list)
    killed: set[int] = field(default_factory=set)  #: pids of the nodes :meth:`kill_node` killed

    @property
    def address(self) -> str:
        """``127.0.0.1:PORT`` of the head's GCS."""
        return f"127.0.0.1:{self.port}"

    @property
    def client_address(self) -> str:
        """``ray://127.0.0.1:PORT`` of the head's client server."""
        return f"ray://127.0.0.1:{self.client_port}"

    def start(self, workers: int = 1) -> LocalRayCluster:
        """Start the head and ``workers`` more nodes; return once all have joined."""
        self.root = Path(tempfile.mkdtemp(prefix="tray-", dir="/tmp"))  # short: Ray's socket paths
        self.port, self.client_port = free_port(), free_port()
        self._start_node("head", ["--head", f"--port={self.port}", "--include-dashboard=false",
                                  f"--ray-client-server-port={self.client_port}"])
        try:
            self._wait_port()
            for i in range(workers):
                self.add_node(f"node{i + 1}")
            self.wait_nodes(workers + 1)
        except BaseException:
            self.stop()
            raise
        return self

    def add_node(self, name: str, resources: dict[str, float] | None = None,
                 env: dict[str, str] | None = None) -> subprocess.Popen:
        """Start one more worker node (it joins in the background: see :meth:`wait_nodes`).

        Parameters
        ----------
        name : str
            Names its temporary directory and output file.
        resources : dict, optional
            Its custom resources (default: the cluster's).
        env : dict, optional
            Environment variables of its processes, on top of this process's.
        """
        return self._start_node(name, [f"--address={self.address}"], resources, env)

    def _start_node(self, name: str, args: list[str], resources: dict[str, float] | None = None,
                    env: dict[str, str] | None = None) -> subprocess.Popen:
        assert self.root is not None
        env = dict(os.environ, RAY_USAGE_STATS_ENABLED="0", RAY_AUTH_MODE="disabled",
                   **FAST_FAILURE_DETECTION, **(env or {}))
        resources = self.resources if resources is None else resources
        cmd = [ray_cli(), "start", *args, "--block", "--disable-usage-stats", "--node-ip-address=127.0.0.1",
               f"--num-cpus={self.cpus}", f"--object-store-memory={OBJECT_STORE_BYTES}",
               f"--temp-dir={self.root / name}", f"--resources={json.dumps(resources)}"]
        out = open(self.root / f"{name}.out", "wb")  # noqa: SIM115 - the node's output, kept for diagnosis
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True)
        out.close()
        self.nodes.append(proc)
        self.names.append(name)
        return proc

    def _wait_port(self) -> None:
        end = time.monotonic() + JOIN_TIMEOUT
        while time.monotonic() < end:
            if self.nodes[0].poll() is not None:
                raise ClusterError(f"the Ray head did not start: {self._output('head')}")
            try:
                socket.create_connection(("127.0.0.1", self.port), 1.0).close()
                return
            except OSError:
                time.sleep(0.2)
        raise ClusterError(f"the Ray head did not open port {self.port} within {JOIN_TIMEOUT:g} s")

    def wait_nodes(self, count: int) -> None:
        """Wait until ``count`` nodes are alive (asked with ``ray`` ``list nodes`` through the GCS)."""
        end = time.monotonic() + JOIN_TIMEOUT
        code = ("import ray,sys; ray.init(address=sys.argv[1], logging_level='ERROR', log_to_driver=False); "
                "print(sum(1 for n in ray.nodes() if n['Alive']))")
        while time.monotonic() < end:
            for proc, name in zip(self.nodes, self.names, strict=True):
                if proc.pid not in self.killed and proc.poll() is not None:
                    raise ClusterError(f"Ray node {name} exited while starting: {self._output(name)}")
            out = subprocess.run([sys.executable, "-c", code, self.address], capture_output=True, text=True,
                                 timeout=JOIN_TIMEOUT)
            if out.returncode == 0 and out.stdout.strip().isdigit() and int(out.stdout.strip()) >= count:
                return
            time.sleep(1.0)
        raise ClusterError(f"{count} Ray nodes did not join within {JOIN_TIMEOUT:g} s")

    def kill_node(self, proc: subprocess.Popen) -> None:
        """Kill a node at once, as a machine that is lost: every process of its group and every
        process below it (Ray starts each worker in a group of its own)."""
        self.killed.add(proc.pid)
        below = descendants(proc.pid)
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        kill_processes(below)
        proc.wait(30)

    def stop(self) -> None:
        """Stop every node (worker nodes first, then the head) and remove the temporary files; without
        a head the nodes are killed (they would wait for it)."""
        headless = bool(self.nodes) and self.nodes[0].poll() is not None
        below = {proc.pid: descendants(proc.pid) for proc in self.nodes}
        for proc in reversed(self.nodes):
            if proc.poll() is None:
                if headless:
                    self.kill_node(proc)
                else:
                    proc.send_signal(signal.SIGTERM)
        for proc in reversed(self.nodes):
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                self.kill_node(proc)
            try:  # what the node left behind in its group (it was given its own session)
                os.killpg(proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            kill_processes(below[proc.pid])  # and its workers, each in a group of its own
        self.nodes, self.names, self.killed = [], [], set()
        if self.root is not None:
            shutil.rmtree(self.root, ignore_errors=True)

    def _output(self, name: str) -> str:
        assert self.root is not None
        path = self.root / f"{name}.out"
        lines = (path.read_text(errors="replace") if path.exists() else "").strip().splitlines()
        errors = [line for line in lines if "Error" in line]
        return (errors or lines or ["(no output)"])[-1]

    def __enter__(self) -> LocalRayCluster:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
