"""An exported network is one shared library that another process runs without the compiler."""

from __future__ import annotations

import ctypes
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import tunecli.runtime
from tunecli import relay
from tunecli.engine import graph as g
from tunecli.engine.graph.build_module import build
from tunecli.engine.graph.passes import PassContext
from tunecli.engine.measure.worker import Worker
from tunecli.errors import ArgumentError

ROOT = Path(__file__).resolve().parents[3]
RNG = np.random.default_rng(0)


@pytest.fixture(scope="module")
def network() -> tuple:
    x = relay.var("data", shape=(1, 8, 16, 16))
    w1, w2 = relay.var("w1", shape=(16, 8, 3, 3)), relay.var("w2", shape=(10, 16))
    y = relay.nn.relu(relay.nn.conv2d(x, w1, padding=(1, 1)))
    y = relay.nn.softmax(relay.nn.dense(relay.nn.batch_flatten(relay.nn.global_avg_pool2d(y)), w2))
    mod = g.IRModule.from_expr(y)
    params = {"w1": RNG.uniform(-1, 1, (16, 8, 3, 3)).astype("float32"),
              "w2": RNG.uniform(-1, 1, (10, 16)).astype("float32")}
    with PassContext(opt_level=3):
        lib = build(mod, "llvm", params=params)
    return mod, params, lib


def test_exported_library_runs_in_a_fresh_process_without_the_compiler(network, tmp_path) -> None:
    mod, params, lib = network
    assert "nn_contrib_conv2d_NCHWc_winograd" in lib.get_graph_json()  # the 3x3 convolution: Winograd
    path = tmp_path / "net.so"
    lib.export_library(str(path))
    data = RNG.uniform(-1, 1, (1, 8, 16, 16)).astype("float32")
    np.save(tmp_path / "data.npy", data)
    script = textwrap.dedent(f"""
        import importlib
        import sys
        import numpy as np
        import tunecli.runtime
        cpu_module = importlib.import_module("tunecli.engine.runtime.cpu")
        lib = tunecli.runtime.load_module({str(path)!r})
        m = lib["default"](tunecli.runtime.cpu())
        m.set_input("data", np.load({str(tmp_path / "data.npy")!r}))
        m.run()
        np.save({str(tmp_path / "out.npy")!r}, m.get_output(0).numpy())
        compiled = [k for k in sys.modules if k.startswith(("tunecli.engine.graph", "tunecli.engine.ops",
                                                             "tunecli.engine.task"))]
        assert not compiled, compiled
        assert "jit" not in cpu_module._jit_state, "the JIT linked something"
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=ROOT,
                          env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}, timeout=120)
    assert done.returncode == 0, done.stderr
    expected = g.evaluate(mod, [data], params)
    np.testing.assert_allclose(np.load(tmp_path / "out.npy"), expected, rtol=1e-5, atol=1e-6)


def test_loaded_library_has_the_graph_and_read_only_params(network, tmp_path) -> None:
    _, _, lib = network
    path = tmp_path / "net.so"
    lib.export_library(path)
    loaded = tunecli.runtime.load_module(str(path))
    assert loaded.get_graph_json() == lib.get_graph_json()
    for name, value in lib.get_params().items():
        got = loaded.get_params()[name]
        np.testing.assert_array_equal(got, value)
        assert not got.flags.writeable


def test_a_file_that_is_not_an_exported_library_is_named(tmp_path) -> None:
    with pytest.raises(ArgumentError, match="load_module: no such file"):
        tunecli.runtime.load_module(str(tmp_path / "missing.so"))
    junk = tmp_path / "junk.so"
    junk.write_bytes(b"not an ELF file")
    with pytest.raises(ArgumentError, match="is not a library exported by export_library"):
        tunecli.runtime.load_module(str(junk))
    with pytest.raises(ArgumentError, match="give a library path, or an object with its entry_name"):
        tunecli.runtime.load_module(b"\x7fELF")



def _block_is_mapped(path: str | None) -> bool:
    """In a worker: whether a 24 MiB block glibc allocates after ``path`` is loaded and run is a
    fresh mapping (its chunk header's IS_MMAPPED bit), i.e. freed with munmap and faulted in anew."""
    if path is not None:
        module = tunecli.runtime.load_module(path)["default"](tunecli.runtime.cpu())
        module.run()
    libc = ctypes.CDLL(None)
    libc.malloc.argtypes, libc.malloc.restype = [ctypes.c_size_t], ctypes.c_void_p
    libc.free.argtypes = [ctypes.c_void_p]
    block = libc.malloc(24 << 20)
    try:
        return bool(ctypes.c_size_t.from_address(block - ctypes.sizeof(ctypes.c_size_t)).value & 2)
    finally:
        libc.free(block)


@pytest.mark.skipif(not hasattr(ctypes.CDLL(None), "gnu_get_libc_version"), reason="glibc's heap")
@pytest.mark.parametrize("suffix", ["tar", "so"])
def test_a_process_running_a_library_reuses_kernel_scratch_memory(network, tmp_path, suffix) -> None:
    # Kernels aligned_alloc and free their large scratch buffers on every call; glibc's default maps
    # such a block afresh each time (a run pays the page faults again), so a process that loads a
    # library (a device server's worker, a fresh process) keeps blocks up to 32 MiB in its heap.
    path = tmp_path / f"net.{suffix}"
    network[2].export_library(str(path))
    worker = Worker(name="heap-probe")
    try:
        fresh = worker.call(f"{__name__}:_block_is_mapped", None, timeout=60)
        worker.close()
        loaded = worker.call(f"{__name__}:_block_is_mapped", str(path), timeout=60)
    finally:
        worker.close()
    assert (fresh.value, loaded.value) == (True, False), (fresh.detail, loaded.detail)
