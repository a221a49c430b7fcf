"""Module.export_library: a kernel module written as a shared library or an archive loads back with
runtime.load_module and runs (its parallel loops on this process's thread pool); a module for
another processor, a path that is no library, and a module with no object each give one error."""

from __future__ import annotations

import shutil

import numpy as np
import pytest

from tunecli.engine import te
from tunecli.engine.build import build
from tunecli.engine.runtime import Module, cpu, load_module
from tunecli.engine.runtime.linker import cross_compiler
from tunecli.engine.runtime.threads import get_num_threads, set_num_threads
from tunecli.engine.schedule import create_schedule
from tunecli.errors import ArgumentError, CodegenError, GraphError, TargetError

N = 4096
AARCH64 = "llvm -mtriple=aarch64-linux-gnu"


def add_one(target: str = "llvm") -> Module:
    """``B = A + 1`` in parallel chunks of 256 (TVM's cross-compilation tutorial's kernel)."""
    A = te.placeholder((N,), name="A")
    B = te.compute((N,), lambda i: A[i] + 1.0, name="B")
    s = create_schedule(B.op)
    xo, _ = s[B].split(B.op.axis[0], factor=256)
    s[B].parallel(xo)
    return build(s, [A, B], target=target, name="add_one")


@pytest.fixture(scope="module")
def module() -> Module:
    return add_one()


@pytest.mark.parametrize("name", ["lib.so", "lib.tar"])
def test_an_exported_module_loads_back_and_runs_by_its_name(module, tmp_path, name):
    path = tmp_path / name
    module.export_library(path)
    loaded = load_module(path)
    assert isinstance(loaded, Module)
    assert loaded.entry_name == "add_one"
    assert loaded.arg_specs == module.arg_specs
    a = np.random.default_rng(0).random(N, dtype="float32")
    b = np.zeros(N, "float32")
    before = get_num_threads()
    set_num_threads(2)  # the parallel loop runs on the thread pool the loader bound
    try:
        loaded(a, b)
    finally:
        set_num_threads(before)
    np.testing.assert_array_equal(b, a + 1)
    timing = loaded.time_evaluator(loaded.entry_name, cpu(), number=3, repeat=2)(a, b)
    assert len(timing.results) == 2 and timing.mean > 0
    with pytest.raises(ArgumentError, match="must have shape"):
        loaded(a[:8], b)


def test_a_shared_library_is_linked_by_the_compiler_given(module, tmp_path):
    path = tmp_path / "lib.so"
    module.export_library(path, cc=shutil.which("cc") or "gcc")
    a = np.arange(N, dtype="float32")
    b = np.zeros(N, "float32")
    load_module(path)(a, b)
    np.testing.assert_array_equal(b, a + 1)


def test_a_module_loaded_from_a_shared_library_has_no_object_to_export(module, tmp_path):
    module.export_library(tmp_path / "lib.so")
    loaded = load_module(tmp_path / "lib.so")
    with pytest.raises(CodegenError, match="loaded from a shared library"):
        loaded.object_bytes()
    with pytest.raises(GraphError, match="export the module that build"):
        loaded.export_library(tmp_path / "again.so")
    module.export_library(tmp_path / "lib.tar")
    assert load_module(tmp_path / "lib.tar").object_bytes() == module.object_bytes()  # an archive keeps it


def test_a_module_for_another_processor_exports_but_refuses_to_load_here(tmp_path):
    arm = add_one(AARCH64)
    arm.export_library(tmp_path / "arm.tar")
    with pytest.raises(TargetError, match="aarch64.*cannot run on this machine"):
        load_module(tmp_path / "arm.tar")
    if shutil.which("aarch64-linux-gnu-gcc"):
        arm.export_library(tmp_path / "arm.so", cross_compiler("aarch64-linux-gnu-gcc"))
        with pytest.raises(TargetError, match="AArch64"):
            load_module(tmp_path / "arm.so")


def test_a_missing_or_foreign_file_is_one_error_naming_it(tmp_path):
    with pytest.raises(ArgumentError, match="no such file .*missing.so"):
        load_module(tmp_path / "missing.so")
    (tmp_path / "notes.tar").write_bytes(b"not an archive")
    with pytest.raises(ArgumentError, match="notes.tar.* is not a graph archive"):
        load_module(tmp_path / "notes.tar")
    (tmp_path / "notes.so").write_bytes(b"not a library")
    with pytest.raises(ArgumentError, match="notes.so.* is not a library exported by export_library"):
        load_module(tmp_path / "notes.so")


def test_a_cuda_kernel_exports_to_an_archive_only(tmp_path):
    A = te.placeholder((N,), name="A")
    B = te.compute((N,), lambda i: A[i] + 1.0, name="B")
    s = create_schedule(B.op)
    bx, tx = s[B].split(B.op.axis[0], factor=64)
    s[B].bind(bx, te.thread_axis("blockIdx.x"))
    s[B].bind(tx, te.thread_axis("threadIdx.x"))
    gpu = build(s, [A, B], target="cuda -arch=sm_80", name="add_one")
    with pytest.raises(GraphError, match="PTX for 'cuda.*export a '.tar'"):
        gpu.export_library(tmp_path / "gpu.so")
    gpu.export_library(tmp_path / "gpu.tar")
    loaded = load_module(tmp_path / "gpu.tar")
    assert loaded.entry_name == "add_one" and loaded.launch == gpu.launch
    assert loaded.get_source("ptx") == gpu.get_source("ptx")
