"""``tunecli tracker`` / ``server`` / ``query``, and a job measured through them (real sockets)."""

from __future__ import annotations

import json
import platform
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from .conftest import TUNECLI, Invoke


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start(*args: str) -> tuple[subprocess.Popen, str]:
    """Start ``tunecli ARGS`` and return it with the first line it prints (its address)."""
    proc = subprocess.Popen([str(TUNECLI), *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    return proc, proc.stdout.readline().strip()


@pytest.fixture()
def device() -> Iterator[tuple[int, str]]:
    """A tracker with one device server registered under key "testkey"; yields (tracker port, key)."""
    port, server_port = free_port(), free_port()
    procs = []
    try:
        tracker, line = start("tracker", "--port", str(port), "--port-end", str(port + 1))
        procs.append(tracker)
        assert line == f"tracker listening on 127.0.0.1:{port}"
        server, line = start("server", "--tracker", f"127.0.0.1:{port}", "--key", "testkey",
                             "--port", str(server_port), "--port-end", str(server_port + 1))
        procs.append(server)
        assert line == f"server 'testkey' listening on 127.0.0.1:{server_port}"
        yield port, "testkey"
    finally:
        for proc in reversed(procs):
            proc.terminate()
            proc.communicate(timeout=10)


def test_query_and_tune_through_the_tracker(invoke: Invoke, device: tuple[int, str], tmp_path: Path) -> None:
    port, key = device
    for _ in range(50):
        query = invoke("query", "--host", "127.0.0.1", "--port", str(port))
        assert query.exit_code == 0, query.output
        if f"server:{key}" in query.stdout and f"{key}   1      1     0" in query.stdout:
            break  # registered, and its resource is in the queue
        time.sleep(0.1)
    assert query.stdout.startswith(f"Tracker address 127.0.0.1:{port}\n\nServer List\n")
    assert f"{key}   1      1     0" in query.stdout
    assert invoke("query", "--tracker", f"127.0.0.1:{port}").stdout == query.stdout

    log = tmp_path / "rpc.log"
    job = tmp_path / "rpc.yaml"
    job.write_text(f"name: rpc\nlog: {log}\ntasks:\n  - template: tutorial/matmul\n    args: [16, 16, 16]\n"
                   "tuner: {kind: random, n_trial: 3, seed: 1}\nmeasure:\n  runner: {kind: rpc, key: "
                   f"{key}, tracker: '127.0.0.1:{port}', number: 1, repeat: 1}}\n")
    result = invoke("tune", str(job), "--json")
    assert result.exit_code == 0, result.output
    task = json.loads(result.stdout)["tasks"][0]
    assert (task["measured"], task["errors"]) == (3, 0)
    assert len(log.read_text().splitlines()) == 3


def test_bad_tracker_address_is_a_usage_error(invoke: Invoke) -> None:
    result = invoke("query", "--tracker", "localhost")
    assert result.exit_code == 2
    assert "expected HOST:PORT (e.g. 127.0.0.1:9190), got 'localhost'" in result.stderr


def test_tracker_and_server_usage_errors(invoke: Invoke) -> None:
    result = invoke("tracker", "--port", "0")
    assert result.exit_code == 2
    assert "Invalid value for '--port': 0 is not in the range 1<=x<=65535." in result.stderr
    result = invoke("server", "--tracker", "127.0.0.1:9190")
    assert result.exit_code == 2
    assert "--tracker needs --key: the device key clients ask the tracker for, e.g. rk3399" in result.stderr


def test_the_server_prints_its_address_device_and_registration(device: tuple[int, str]) -> None:
    port, server_port = device[0], free_port()
    server, line = start("server", "--tracker", f"127.0.0.1:{port}", "--key", "second",
                         "--port", str(server_port), "--port-end", str(server_port + 1))
    try:
        assert line == f"server 'second' listening on 127.0.0.1:{server_port}"
        assert server.stdout is not None
        assert server.stdout.readline().startswith("serving device 'second' (")
        assert server.stdout.readline().strip() == f"registered with the tracker 127.0.0.1:{port} as 'second'"
    finally:
        server.terminate()
        server.communicate(timeout=10)


def test_a_server_without_tracker_or_key_takes_tvms_plain_connect() -> None:
    """TVM's cross-compilation tutorial: ``rpc_server --port 9090`` on the board, then
    ``rpc.connect(host, port)`` with no key."""
    from tunecli import rpc

    server_port = free_port()
    server, line = start("server", "--port", str(server_port), "--port-end", str(server_port + 1))
    try:
        assert line == f"server listening on 127.0.0.1:{server_port} (no key: clients give none)"
        assert server.stdout is not None
        assert server.stdout.readline().startswith("serving device (")
        with rpc.connect("127.0.0.1", server_port) as remote:
            assert remote.describe().arch == platform.machine()
            assert remote.cpu().exist
    finally:
        server.terminate()
        server.communicate(timeout=10)


def test_rpc_runner_reports_each_result_as_it_is_measured(device: tuple[int, str]) -> None:
    # RPCRunner.run(inputs, builds, on_result=hook): a failed build is reported at once, each
    # measurement as soon as it is back — in the caller's thread, each index exactly once.
    import threading

    from tunecli.engine.measure import LocalBuilder
    from tunecli.engine.measure.result import MeasureErrorNo, MeasureInput, MeasureResult
    from tunecli.engine.rpc.rpc_runner import RPCRunner
    from tunecli.engine.task.task import create

    port, key = device
    task = create("tutorial/matmul", (16, 16, 16, "float32"), "llvm")
    builder = LocalBuilder(n_parallel=1)
    try:
        builder.set_task(task)
        inputs = [MeasureInput(task.target, task, task.config_space.get(i)) for i in (0, 1, 2)]
        builds = builder.build(inputs)
    finally:
        builder.close()
    failed = ("build failed", RuntimeError("build failed"))
    builds[1] = MeasureResult(failed, MeasureErrorNo.COMPILE_HOST, 0.1, time.time())
    runner = RPCRunner(key, "127.0.0.1", port, number=1, repeat=1, cooldown_interval=0.5)
    deadline = time.time() + 10
    while not runner._devices_or_none() and time.time() < deadline:
        time.sleep(0.1)
    runner.set_task(task)
    reports: list[tuple[int, float, bool]] = []
    results = runner.run(inputs, builds, on_result=lambda i, r: reports.append(
        (i, time.time(), threading.current_thread() is threading.main_thread())))
    assert [i for i, _, _ in reports] in ([1, 0, 2], [1, 2, 0])
    assert all(in_main for _, _, in_main in reports)
    assert [int(r.error_no) for r in results] == [0, int(MeasureErrorNo.COMPILE_HOST), 0]
    first_measured, last = reports[1], results[reports[2][0]]
    assert first_measured[1] < last.timestamp  # reported while the other config was still measuring


def test_a_tracker_that_wants_a_token_names_the_option(invoke: Invoke, monkeypatch) -> None:
    from tunecli.engine.rpc.tracker import Tracker

    monkeypatch.delenv("TUNECLI_RPC_TOKEN", raising=False)
    trk = Tracker("127.0.0.1", 0, 0, token="s3cret")
    try:
        result = invoke("query", "--port", str(trk.port))
        assert result.exit_code == 1
        assert result.stderr.endswith(": the tracker refused the request: it requires a token: give one to "
                                      "the client, or set TUNECLI_RPC_TOKEN (--token)\n")
        assert invoke("query", "--port", str(trk.port), "--token", "s3cret").exit_code == 0
    finally:
        trk.stop()
