"""TVM's remote session API on tunecli's server: files in a per-session directory, a network
library loaded, run and timed in the server's worker, and every refusal or failure ending in one
clear error while the server keeps serving."""

from __future__ import annotations

import os
import shutil
import signal
import tempfile
import threading
import time

import numpy as np
import pytest

import tunecli
from tests.arm_board import ARM_BOARD, tiny_network
from tunecli.contrib import graph_executor, utils
from tunecli.engine.graph.build_module import build
from tunecli.engine.rpc.client import connect, connect_tracker
from tunecli.engine.rpc.device_session import request_device, request_remote
from tunecli.engine.rpc.remote_network import run_on_device
from tunecli.engine.rpc.server import Server
from tunecli.engine.rpc.session_files import SessionFiles, SessionRefusal
from tunecli.engine.runtime import cuda
from tunecli.errors import ArgumentError, RPCError, TargetError

from .conftest import free_servers, wait_for

X = np.random.default_rng(1).standard_normal((1, 3, 16, 16)).astype("float32")

SERVER_CODE = """
import sys
from tunecli.engine.rpc.server import run_server
run_server(("127.0.0.1", int(sys.argv[1])), sys.argv[2], host="127.0.0.1", port=0, port_end=0, token="",
           ping_period=0.3, unmatch_timeout=1.0, retry_period=0.3, idle_timeout=60.0,
           on_ready=lambda host, port: print(port, flush=True))
"""


@pytest.fixture(scope="module")
def host_lib():
    mod, params = tiny_network()
    return build(mod, target="llvm", params=params)


@pytest.fixture(scope="module")
def expected(host_lib) -> np.ndarray:
    module = host_lib["default"](None)
    module.set_input("data", X)
    module.run()
    return module.get_output(0).numpy()


@pytest.fixture
def server(tracker, tmp_path, monkeypatch):
    """An in-process server of key ``host`` (its worker a real child process) with a 1 MiB upload
    limit; session directories are made under ``tmp_path``."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    srv = Server("127.0.0.1", 0, 0, key="host", tracker_addr=("127.0.0.1", tracker.port), token="",
                 ping_period=0.3, unmatch_timeout=1.0, idle_timeout=60.0, max_upload=1 << 20).start()
    wait_for(lambda: free_servers(tracker, "host") == 1, what="server registered")
    yield srv
    srv.stop()


def graph_module_on(remote, tar):
    """The exported graph library ``tar`` uploaded to ``remote`` and loaded there as a graph module."""
    remote.upload(str(tar))
    return graph_executor.GraphModule(remote.load_module(tar.name)["default"](remote.cpu()))


def board_server(procs, tracker):
    """A server process of key ``board``, once the tracker has it free."""
    proc = procs.child(SERVER_CODE, [str(tracker.port), "board"])
    wait_for(lambda: free_servers(tracker, "board") == 1, what="server registered")
    return proc


def _session_dirs(tmp_path) -> list[str]:
    return [n for n in os.listdir(tmp_path) if n.startswith("tunecli_rpc_session_")]


@pytest.mark.parametrize("name", ["net.tar", "net.so"])
def test_a_network_uploaded_loaded_run_and_timed_on_the_server_matches_the_local_run(
        server, tracker, host_lib, expected, name, tmp_path):
    tmp = utils.tempdir()
    host_lib.export_library(tmp.relpath(name))
    remote = request_remote("host", "127.0.0.1", tracker.port, timeout=60)
    remote.upload(tmp.relpath(name))
    assert remote.listdir() == [name]
    rlib = remote.load_module(name)
    dev = remote.cpu(0)
    module = graph_executor.GraphModule(rlib["default"](dev))
    module.set_input("data", tunecli.nd.array(X, dev))
    module.run()
    np.testing.assert_allclose(module.get_output(0).numpy(), expected, rtol=1e-6)
    module.set_input("data", X * 2)  # a host array travels with the call
    module.run()
    assert not np.allclose(module.get_output(0).numpy(), expected)
    timing = module.module.time_evaluator("run", dev, number=3, repeat=2)()
    assert len(timing.results) == 2 and all(r > 0 for r in timing.results)
    bench = module.benchmark(dev, number=1, repeat=2)  # tune_relay_arm.py's last step, printed
    assert len(bench.results) == 2 and str(bench).startswith("Execution time summary:")
    assert len(_session_dirs(tmp_path)) == 1
    remote.close()
    wait_for(lambda: not _session_dirs(tmp_path), what="the session's directory removed")


def test_graph_executor_create_and_outputs_into_remote_arrays(server, tracker, host_lib, expected, tmp_path):
    """The older way of TVM's scripts, ``graph_executor.create(graph, rlib, dev)`` with
    ``set_input(**params)``, and ``get_output(i, out)`` into an array of the device."""
    host_lib.export_library(tmp_path / "net.tar")
    remote = request_remote("host", "127.0.0.1", tracker.port, timeout=60)
    remote.upload(str(tmp_path / "net.tar"))
    rlib, dev = remote.load_module("net.tar"), remote.cpu(0)
    module = graph_executor.create(host_lib.get_graph_json(), rlib, dev)
    module.set_input(**host_lib.get_params())
    module.set_input("data", X)
    module.run()
    out = tunecli.nd.empty(expected.shape, "float32", dev)
    assert module.get_output(0, out) is out
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-6)
    other, other_params = tiny_network(batch=2)
    with pytest.raises(ArgumentError, match="graph_executor.create takes the graph it was built with"):
        graph_executor.create(build(other, target="llvm", params=other_params).get_graph_json(), rlib, dev)
    remote.close()


@pytest.mark.slow
def test_a_remote_call_may_run_longer_than_the_idle_limit_not_past_the_session(tracker, host_lib, tmp_path):
    """Timing a network many times on a slow board: the call runs as long as it needs (the idle
    limit is about a silent client), up to the session's own time limit when it has one."""
    srv = Server("127.0.0.1", 0, 0, key="slow", tracker_addr=("127.0.0.1", tracker.port), token="",
                 ping_period=0.3, idle_timeout=1.0).start()
    try:
        wait_for(lambda: free_servers(tracker, "slow") == 1, what="server registered")
        host_lib.export_library(tmp_path / "net.tar")
        for session_timeout, run_ms in ((0, 2500), (3, 6000)):
            remote = request_remote("slow", "127.0.0.1", tracker.port, timeout=session_timeout)
            module = graph_module_on(remote, tmp_path / "net.tar")
            timer = module.module.time_evaluator("run", remote.cpu(), number=1, min_repeat_ms=run_ms)
            if not session_timeout:
                assert timer().results[0] > 0  # 2.5 s, past the idle limit of 1 s
            else:
                with pytest.raises(RPCError, match="ran past its time limit of [0-9.]+ s in remote time"):
                    timer()  # 6 s in a session of 3 s
            remote.close()
    finally:
        srv.stop()


def test_remote_arrays_live_on_the_device(server, tracker):
    remote = request_remote("host", "127.0.0.1", tracker.port)
    dev = remote.device("llvm -device=arm_cpu", 0)
    assert dev == remote.cpu(0)
    a = tunecli.nd.array(np.arange(6, dtype="float32").reshape(2, 3), dev)
    np.testing.assert_array_equal(a.numpy(), np.arange(6).reshape(2, 3))
    a.copyfrom(np.ones((2, 3), "float32"))
    np.testing.assert_array_equal(a.asnumpy(), np.ones((2, 3)))
    np.testing.assert_array_equal(tunecli.nd.empty((4,), "int32", dev).numpy(), np.zeros(4))
    remote.upload(b"hello", "notes/a.txt")
    assert remote.download("notes/a.txt") == b"hello"
    remote.remove("notes")
    assert remote.listdir() == []
    remote.close()


@pytest.mark.parametrize("name", ["../escape.tar", "/tmp/escape.tar", "a/../../escape.tar"])
def test_a_path_escaping_the_session_directory_is_refused_and_the_session_goes_on(server, tracker, name):
    remote = request_remote("host", "127.0.0.1", tracker.port)
    with pytest.raises(RPCError, match="escapes the session's directory"):
        remote.upload(b"data", name)
    remote.upload(b"data", "inside.bin")
    assert remote.listdir() == ["inside.bin"]
    remote.close()


def test_an_upload_over_the_limit_is_refused_and_the_session_goes_on(server, tracker, host_lib, tmp_path):
    remote = request_remote("host", "127.0.0.1", tracker.port)
    with pytest.raises(RPCError, match="exceed the server's limit of 1048576 bytes"):
        remote.upload(bytes(2 << 20), "big.bin")
    host_lib.export_library(tmp_path / "net.tar")
    remote.upload(str(tmp_path / "net.tar"))
    remote.load_module("net.tar")
    remote.close()


def test_a_library_for_another_machine_is_refused_and_the_session_goes_on(server, tracker, host_lib,
                                                                         tmp_path):
    mod, params = tiny_network()
    build(mod, target=ARM_BOARD, params=params).export_library(tmp_path / "arm.tar")
    remote = request_remote("host", "127.0.0.1", tracker.port)
    remote.upload(str(tmp_path / "arm.tar"))
    with pytest.raises(RPCError, match="compiled for .*aarch64.* cannot run on this machine"):
        remote.load_module("arm.tar")
    if shutil.which("aarch64-linux-gnu-gcc"):
        build(mod, target=ARM_BOARD, params=params).export_library(tmp_path / "arm.so")
        remote.upload(str(tmp_path / "arm.so"))
        with pytest.raises(RPCError, match="AArch64"):
            remote.load_module("arm.so")
    host_lib.export_library(tmp_path / "net.tar")
    module = graph_module_on(remote, tmp_path / "net.tar")
    module.run(data=X)
    remote.close()


@pytest.mark.skipif(cuda(0).exist, reason="this machine has a CUDA GPU")
def test_a_server_without_a_gpu_refuses_a_cuda_library(server, tracker, tmp_path):
    mod, params = tiny_network()
    lib = build(mod, target="cuda -arch=sm_80", params=params)
    lib.export_library(tmp_path / "net.tar")
    remote = request_remote("host", "127.0.0.1", tracker.port)
    remote.upload(str(tmp_path / "net.tar"))
    with pytest.raises(RPCError, match="another machine: .*has no CUDA driver/GPU"):
        remote.load_module("net.tar")
    assert remote.listdir() == ["net.tar"]  # the session goes on
    assert remote.cpu().exist and not remote.cuda(0).exist  # as the server describes itself
    remote.close()


def _worker_of(pid: int) -> int:
    """The server's worker process (its spawned child that is not multiprocessing's resource tracker)."""
    with open(f"/proc/{pid}/task/{pid}/children") as f:
        children = [int(p) for p in f.read().split()]
    workers = []
    for child in children:
        with open(f"/proc/{child}/cmdline", "rb") as f:
            if b"resource_tracker" not in f.read():
                workers.append(child)
    (worker,) = workers
    return worker


def test_a_worker_killed_mid_run_ends_the_session_and_the_server_serves_the_next(
        procs, tracker, host_lib, expected, tmp_path):
    proc = board_server(procs, tracker)
    host_lib.export_library(tmp_path / "net.tar")
    remote = request_remote("board", "127.0.0.1", tracker.port)
    module = graph_module_on(remote, tmp_path / "net.tar")
    os.kill(_worker_of(proc.popen.pid), signal.SIGKILL)  # as a library that crashes the process would
    with pytest.raises(RPCError, match="worker of device 'board' .*died.*connect again"):
        module.run(data=X)
    with pytest.raises(RPCError, match="session is closed"):
        remote.listdir()
    wait_for(lambda: free_servers(tracker, "board") == 1, timeout=30, what="server free again")
    remote = request_remote("board", "127.0.0.1", tracker.port)
    module = graph_module_on(remote, tmp_path / "net.tar")
    module.run(data=X)
    np.testing.assert_allclose(module.get_output(0).numpy(), expected, rtol=1e-6)
    remote.close()


def test_a_server_killed_mid_run_is_one_clear_error(procs, tracker, host_lib, tmp_path):
    proc = board_server(procs, tracker)
    host_lib.export_library(tmp_path / "net.tar")
    remote = request_remote("board", "127.0.0.1", tracker.port)
    module = graph_module_on(remote, tmp_path / "net.tar")
    ftimer = module.module.time_evaluator("run", remote.cpu(), number=1000000, repeat=1)
    start = time.monotonic()
    threading.Timer(1.0, proc.kill).start()  # the board loses power while the network runs
    with pytest.raises(RPCError, match="rpc session 127.0.0.1"):
        ftimer()
    assert time.monotonic() - start < 30


def test_a_bad_token_is_refused_and_the_server_still_serves(tracker):
    srv = Server("127.0.0.1", 0, 0, key="tok", tracker_addr=None, token="s3cret").start()
    try:
        with pytest.raises(RPCError, match="cannot find server that matches key"):
            connect("127.0.0.1", srv.port, "tok", token="wrong")
        with connect("127.0.0.1", srv.port, "tok", token="s3cret") as remote:
            remote.upload(b"ok", "a.txt")
            assert remote.listdir() == ["a.txt"]
    finally:
        srv.stop()


def test_session_files_stay_inside_their_directory_and_under_the_limit(tmp_path):
    files = SessionFiles(max_bytes=10)
    try:
        for bad in ["", "..", "../x", "/etc/passwd", "a/../../x", "a\0b", 7]:
            with pytest.raises(SessionRefusal):
                files.path(bad)
        files.write_chunk("a.bin", 0, 6, b"abc")
        with pytest.raises(SessionRefusal, match="out of order"):
            files.write_chunk("a.bin", 5, 6, b"d")
        files.write_chunk("a.bin", 3, 6, b"def")
        with pytest.raises(SessionRefusal, match="exceed"):
            files.write_chunk("b.bin", 0, 5, b"")
        assert files.read("a.bin", 100) == b"abcdef"
        root = files.root
    finally:
        files.close()
    assert not os.path.exists(root)


def test_a_tracker_session_request_gives_the_remote_api(server, tracker):
    with connect_tracker("127.0.0.1", tracker.port) as trk:
        remote = trk.request("host", priority=1, session_timeout=30)
    remote.upload(b"x", "x.bin")
    assert remote.listdir() == ["x.bin"]
    remote.close()


@pytest.mark.parametrize("fcompile", [None, "cc"])
def test_run_on_device_ships_runs_and_times_a_build_in_one_call(server, tracker, host_lib, expected,
                                                                fcompile):
    session = request_device("127.0.0.1", tracker.port, "host", target=host_lib.target)
    try:
        run = run_on_device(session, host_lib, {"data": X}, number=2, repeat=2, fcompile=fcompile)
    finally:
        session.close()
    assert run.library == ("net.tar" if fcompile is None else "net.so")
    np.testing.assert_allclose(run.outputs[0], expected, rtol=1e-6)
    assert len(run.results) == 2 and run.mean > 0


def test_request_device_refuses_a_device_that_cannot_run_the_target(server, tracker):
    with pytest.raises(TargetError, match="request: .*aarch64"):
        request_device("127.0.0.1", tracker.port, "host", target=ARM_BOARD, where="request")
    wait_for(lambda: free_servers(tracker, "host") == 1, what="the device free again")


def test_a_bounded_request_for_a_key_no_server_has_fails_at_once_naming_the_keys(server, tracker):
    """``tunecli apply`` with a mistyped key: one error now, not a timeout after a minute."""
    start = time.monotonic()
    with pytest.raises(RPCError) as err:
        request_device("127.0.0.1", tracker.port, "hots", wait_timeout=60, where="apply")
    where = f"127.0.0.1:{tracker.port}"
    assert str(err.value) == (f"apply: the tracker {where} has no server of key 'hots' (its keys: 'host'); "
                              f"start one with `tunecli server --tracker {where} --key hots`")
    assert time.monotonic() - start < 10
    with request_device("127.0.0.1", tracker.port, "host", wait_timeout=60) as session:
        assert session.describe().key == "host"
