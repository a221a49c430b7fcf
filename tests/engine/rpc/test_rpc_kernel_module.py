"""TVM's cross-compilation and RPC tutorial on a ``tunecli server``: a kernel module built, exported,
uploaded, loaded on the server, called by name on remote arrays and timed there; a module for
another processor and arguments that are not the session's arrays are refused, and the session
goes on."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest

import tunecli
from tests.engine.rpc.cli_server import cli_server
from tests.engine.runtime.test_module_export import AARCH64, N, add_one
from tunecli.engine.rpc.remote import RemoteSession, connect
from tunecli.engine.rpc.remote_objects import RemoteKernelModule
from tunecli.errors import ArgumentError, RPCError


@pytest.fixture(scope="module")
def server_port() -> Iterator[int]:
    with cli_server("host") as port:
        yield port


@pytest.fixture
def remote(server_port) -> Iterator[RemoteSession]:
    session = connect("127.0.0.1", server_port, key="host")
    yield session
    session.close()


@pytest.mark.parametrize("name", ["lib.tar", "lib.so"])
def test_a_kernel_module_uploaded_and_loaded_on_the_server_runs_by_name(remote, tmp_path, name):
    add_one().export_library(tmp_path / name)
    remote.upload(str(tmp_path / name))
    func = remote.load_module(name)
    assert isinstance(func, RemoteKernelModule) and func.entry_name == "add_one"
    dev = remote.cpu()
    x = np.random.default_rng(2).random(N, dtype="float32")
    a, b = tunecli.nd.array(x, dev), tunecli.nd.array(np.zeros(N, "float32"), dev)
    func(a, b)
    np.testing.assert_array_equal(b.numpy(), x + 1)
    b.copyfrom(np.zeros(N, "float32"))
    func["add_one"](a, b)
    np.testing.assert_array_equal(b.numpy(), x + 1)
    timing = func.time_evaluator(func.entry_name, dev, number=5, repeat=2)(a, b)
    assert len(timing.results) == 2 and timing.mean > 0


def test_bad_calls_are_refused_and_the_session_goes_on(remote, tmp_path):
    add_one(AARCH64).export_library(tmp_path / "arm.tar")
    remote.upload(str(tmp_path / "arm.tar"))
    with pytest.raises(RPCError, match="compiled for .*aarch64.* cannot run on this machine"):
        remote.load_module("arm.tar")
    with pytest.raises(RPCError, match="no such file|not found|does not exist"):
        remote.load_module("missing.tar")
    add_one().export_library(tmp_path / "lib.tar")
    remote.upload(str(tmp_path / "lib.tar"))
    func = remote.load_module("lib.tar")
    dev = remote.cpu()
    a, b = tunecli.nd.array(np.ones(N, "float32"), dev), tunecli.nd.empty((N,), "float32", dev)
    with pytest.raises(ArgumentError, match="no function 'add_two'; its function is 'add_one'"):
        func["add_two"]
    with pytest.raises(ArgumentError, match="argument 1 must be an array on a device of the module"):
        func(a, np.zeros(N, "float32"))
    with pytest.raises(ArgumentError, match="takes 2 arrays, got 1"):
        func(a)
    short = tunecli.nd.array(np.ones(8, "float32"), dev)
    with pytest.raises(RPCError, match="must have shape"):
        func(short, b)
    func(a, b)
    np.testing.assert_array_equal(b.numpy(), np.full(N, 2, "float32"))
