"""A TVM user's cross-compilation and RPC script, written against ``import tunecli as tvm``: a
kernel built for the device's target, exported (``lib.tar``, ``lib.so``), uploaded to a
``tunecli server``, loaded there, run on remote arrays and timed on the device; a kernel
cross-compiled for another processor is refused by the server, with the session going on."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest

import tunecli as tvm
from tests.engine.rpc.cli_server import cli_server
from tunecli import rpc, te
from tunecli.contrib import utils
from tunecli.errors import RPCError

LENGTH = 1024


@pytest.fixture(scope="module")
def port() -> Iterator[int]:
    with cli_server("board") as server_port:
        yield server_port


def add_one(target: str) -> tvm.runtime.Module:
    n = tvm.runtime.convert(LENGTH)  # the tutorial's way of writing the length
    A = te.placeholder((n,), name="A")
    B = te.compute(A.shape, lambda *i: A(*i) + 1.0, name="B")
    s = te.create_schedule(B.op)
    xo, xi = s[B].split(B.op.axis[0], factor=64)
    s[B].parallel(xo)
    return tvm.build(s, [A, B], target=target, name="add_one")


@pytest.mark.parametrize("name", ["lib.tar", "lib.so"])
def test_a_kernel_exported_uploaded_and_run_on_the_device(port: int, name: str) -> None:
    temp = utils.tempdir()
    path = temp.relpath(name)
    add_one("llvm").export_library(path)
    remote = rpc.connect("127.0.0.1", port, key="board")
    remote.upload(path)
    func = remote.load_module(name)
    dev = remote.cpu()
    a = tvm.nd.array(np.random.uniform(size=LENGTH).astype("float32"), dev)
    b = tvm.nd.array(np.zeros(LENGTH, dtype="float32"), dev)
    func(a, b)
    np.testing.assert_equal(b.numpy(), a.numpy() + 1)
    cost = func.time_evaluator(func.entry_name, dev, number=10)(a, b).mean
    assert cost > 0
    remote.close()


def test_a_kernel_for_another_processor_is_refused_by_the_device(port: int) -> None:
    temp = utils.tempdir()
    add_one("llvm -mtriple=aarch64-linux-gnu").export_library(temp.relpath("arm.tar"))
    remote = rpc.connect("127.0.0.1", port, key="board")
    remote.upload(temp.relpath("arm.tar"))
    with pytest.raises(RPCError, match="aarch64.* cannot run on this machine"):
        remote.load_module("arm.tar")
    assert remote.listdir() == ["arm.tar"]  # the session goes on
    remote.close()
