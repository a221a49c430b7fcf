"""Module: what build returns; argument checks, object files, sources, cross targets, loading elsewhere."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
import time

import numpy as np
import pytest

from tests.engine.kernels_ir import EM_AARCH64, EM_X86_64, elf_machine
from tunecli.engine import te
from tunecli.engine.build import build
from tunecli.engine.codegen import ArgSpec, CompiledKernel, codegen
from tunecli.engine.ir import Buffer, BufferStore, For, PrimFunc, Var, const
from tunecli.engine.runtime import CPUDevice, Module, cpu, load_module
from tunecli.engine.schedule import create_schedule
from tunecli.engine.target import Target
from tunecli.errors import ArgumentError, CodegenError, TargetError


def matmul(m: int, n: int, k: int, name: str = "matmul", target: str = "llvm", lanes: int = 0) -> Module:
    """``C = A @ B`` built for ``target``; with ``lanes``: rows in parallel, j split by it and vectorized."""
    A = te.placeholder((m, k), name="A")
    B = te.placeholder((k, n), name="B")
    r = te.reduce_axis((0, k), name="k")
    C = te.compute((m, n), lambda i, j: te.sum(A[i, r] * B[r, j], axis=r), name="C")
    s = create_schedule(C.op)
    if lanes:
        i, j = s[C].op.axis
        jo, ji = s[C].split(j, lanes)
        s[C].reorder(i, jo, r, ji)
        s[C].vectorize(ji)
        s[C].parallel(i)
    return build(s, [A, B, C], target=target, name=name)


@pytest.fixture(scope="module")
def mm():
    return matmul(4, 5, 6)


def test_codegen_gives_a_record_that_build_wraps_in_a_module():
    A = Buffer("A", (8,), "float32")
    i = Var("i")
    compiled = codegen(PrimFunc("fill", [A], For(i, 0, 8, "serial", BufferStore(A, const(2.0), [i]))))
    assert isinstance(compiled, CompiledKernel) and compiled.entry_name == "fill"
    assert compiled.arg_specs == (ArgSpec("A", (8,), "float32", is_output=True),)
    assert compiled.obj[:4] == b"\x7fELF" and "define void @fill(" in compiled.ir_text
    with pytest.raises(dataclasses.FrozenInstanceError):
        compiled.entry_name = "other"  # type: ignore[misc]
    mod = Module(compiled)
    assert mod.device == cpu(0) and isinstance(mod.device, CPUDevice)
    out = np.zeros(8, "float32")
    mod(out)
    assert (out == 2).all()


def test_module_metadata(mm):
    assert mm.entry_name == "matmul"
    assert mm.arg_specs == [ArgSpec("A", (4, 6), "float32"), ArgSpec("B", (6, 5), "float32"),
                            ArgSpec("C", (4, 5), "float32", is_output=True)]
    assert mm.target == Target("llvm")
    assert elf_machine(mm.object_bytes()) == EM_X86_64
    assert "define void @matmul(" in mm.get_source("ll")
    assert "matmul:" in mm.get_source("asm")


@pytest.mark.parametrize("args,match", [
    (lambda a, b, c: (a, b), r"takes 3 arrays \(A, B, C\), got 2"),
    (lambda a, b, c: (a, b, c.astype("float64")), r"argument 2 \('C'\) must have dtype float32, got float64"),
    (lambda a, b, c: (a, b.T.copy(), c), r"argument 1 \('B'\) must have shape \(6, 5\), got \(5, 6\)"),
    (lambda a, b, c: (np.asfortranarray(a), b, c), r"argument 0 \('A'\) must be C-contiguous"),
    (lambda a, b, c: (a.tolist(), b, c), r"argument 0 \('A'\) must be a numpy array, got list"),
    (lambda a, b, c: (a, b, a.reshape(-1)[:20].reshape(4, 5)),
     r"arguments 0 \('A'\) and 2 \('C'\) share memory"),
    (lambda a, b, c: (a, b, np.frombuffer(bytes(80), "float32").reshape(4, 5)),
     r"argument 2 \('C'\) is an output and must be a writable array"),
])
def test_call_checks_arguments(mm, args, match):
    a, b, c = np.ones((4, 6), "float32"), np.ones((6, 5), "float32"), np.zeros((4, 5), "float32")
    with pytest.raises(ArgumentError, match=match):
        mm(*args(a, b, c))
    with pytest.raises(ArgumentError, match=match):
        mm.time_evaluator(number=1)(*args(a, b, c))


class _CountedAddress(np.ndarray):
    """An array that counts how often its ``ctypes`` view (its data address) is read."""

    reads = 0

    @property
    def ctypes(self):  # noqa: D102 - numpy's attribute
        type(self).reads += 1
        return super().ctypes


def test_a_call_reads_a_writable_arrays_address_without_its_ctypes_view(mm):
    """``ndarray.ctypes`` builds ctypes objects on every read, a call's fixed cost: a writable
    array's address comes from a cheaper view, a read-only one's from ``ctypes`` once, and the
    result is still the product."""
    a, b = np.ones((4, 6), "float32"), np.full((6, 5), 2.0, "float32")
    arrays = [x.view(_CountedAddress) for x in (a, b, np.zeros((4, 5), "float32"))]
    _CountedAddress.reads = 0
    mm(*arrays)
    assert _CountedAddress.reads == 0
    arrays[1].setflags(write=False)
    mm(*arrays)
    assert _CountedAddress.reads == 1
    np.testing.assert_allclose(np.asarray(arrays[2]), a @ b)


def test_save_object_ir_and_assembly(mm, tmp_path):
    mm.save(tmp_path / "k.o")
    mm.save(tmp_path / "k.ll")
    mm.save(tmp_path / "k.s")
    assert (tmp_path / "k.o").read_bytes() == mm.object_bytes()
    assert "define void @matmul(" in (tmp_path / "k.ll").read_text()
    assert "matmul:" in (tmp_path / "k.s").read_text()
    with pytest.raises(CodegenError, match="k.txt"):
        mm.save(tmp_path / "k.txt")
    with pytest.raises(CodegenError, match="unknown format 'ptx'"):
        mm.get_source("ptx")


def test_cross_target_compiles_an_aarch64_object_but_does_not_run():
    mod = matmul(8, 32, 8, target="llvm -mtriple=aarch64-linux-gnu", lanes=16)
    assert elf_machine(mod.object_bytes()) == EM_AARCH64
    assert "fmla" in mod.get_source("asm")  # NEON FMA
    a, b, c = np.ones((8, 8), "float32"), np.ones((8, 32), "float32"), np.zeros((8, 32), "float32")
    with pytest.raises(TargetError, match="aarch64-linux-gnu.*cannot run on this machine"):
        mod(a, b, c)


def test_unknown_triple_is_a_target_error():
    with pytest.raises(TargetError, match="no-such-arch"):
        matmul(2, 2, 2, target="llvm -mtriple=no-such-arch-linux")


def test_two_modules_with_the_same_entry_name_coexist():
    n = 8
    outs = []
    for value in (1.0, 2.0):
        o, i = Buffer("o", (n,), "float32"), Var("i")
        outs.append(build(PrimFunc("same", [o], For(i, 0, n, "parallel", BufferStore(o, const(value), [i])))))
    r = np.zeros(n, "float32")
    outs[0](r)
    assert (r == 1).all()
    outs[1](r)
    assert (r == 2).all()


CHILD = r'''
import sys, numpy as np
from tunecli.engine.codegen import ArgSpec
from tunecli.engine.runtime import load_module, set_num_threads
obj = open(sys.argv[1], "rb").read()
m, n, k = 16, 64, 24
mod = load_module(obj, "dense_x", [("A", (m, k), "float32"), ArgSpec("B", (k, n), "float32"),
                                   ("C", (m, n), "float32")])
rng = np.random.default_rng(3)
a, b = rng.standard_normal((m, k)).astype("float32"), rng.standard_normal((k, n)).astype("float32")
for threads in (1, 2):
    set_num_threads(threads)
    c = np.zeros((m, n), "float32")
    mod(a, b, c)
    assert np.allclose(c, a @ b, rtol=1e-4, atol=1e-4)
costs = mod.time_evaluator(number=2, repeat=3)(a, b, c)
assert len(costs) == 3 and all(t > 0 for t in costs)
try:
    mod.get_source("ll")
except Exception as err:
    print(type(err).__name__)
print("child-ok")
'''


def test_object_loads_and_runs_in_another_process(tmp_path):
    mod = matmul(16, 64, 24, name="dense_x", lanes=16)
    path = tmp_path / "dense_x.o"
    mod.save(path)
    proc = subprocess.run([sys.executable, "-c", CHILD, str(path)], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.split() == ["CodegenError", "child-ok"]


def test_load_module_of_garbage_raises_codegen_error_on_first_call():
    mod = load_module(b"not an object file", "f", [("x", (1,), "float32")])
    with pytest.raises(CodegenError, match="could not be linked"):
        mod(np.zeros(1, "float32"))


def test_time_evaluator_on_a_module(mm):
    a, b, c = np.ones((4, 6), "float32"), np.ones((6, 5), "float32"), np.zeros((4, 5), "float32")
    costs = mm.time_evaluator(number=5, repeat=2, min_repeat_ms=1)(a, b, c)
    assert len(costs) == 2 and all(0 < t < 1e-3 for t in costs)
    start = time.perf_counter()
    costs = mm.time_evaluator(number=1, repeat=1, warmup_ms=30)(a, b, c)
    assert time.perf_counter() - start >= 0.03 and costs[0] < 1e-3  # warmed up, untimed
    assert (c == 6).all()
