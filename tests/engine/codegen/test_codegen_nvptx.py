"""The NVPTX backend: lowered PrimFuncs with blockIdx/threadIdx bindings become PTX kernels.

The shared emitters build the body; the backend declares a ``ptx_kernel`` with buffers in global
memory, reads ``%ctaid``/``%tid`` for bound loops, puts ``shared`` temporaries in shared memory
and calls libdevice (``__nv_*``) for math.  No GPU is needed to emit PTX; where ``ptxas`` is
installed, it must accept what is emitted.  Kernels are lowered for ``cuda`` (shared stages over
the block's tile, barriers from storage sync: ``tests/engine/lower/test_lower_gpu.py``); linking
libdevice and running kernels belong to the CUDA runtime.
"""

from __future__ import annotations

import re
import subprocess

import pytest

import tunecli
from tests.engine.codegen.codegen_kernels import loop
from tests.engine.gpu_kernels import reversed_copy, tiled_matmul
from tunecli import te
from tunecli.engine.build import build
from tunecli.engine.codegen import codegen, compile_kernel, emit_llvm
from tunecli.engine.codegen.backend_table import backend_for
from tunecli.engine.codegen.cpu_backend import CPUBackend
from tunecli.engine.codegen.nvptx_backend import NVPTXBackend, libdevice_path, ptxas_path
from tunecli.engine.ir import (
    Allocate,
    Buffer,
    BufferLoad,
    BufferStore,
    Call,
    Evaluate,
    For,
    PrimFunc,
    SeqStmt,
    StringImm,
    Var,
    const,
)
from tunecli.engine.lower import lower
from tunecli.engine.target import Target
from tunecli.errors import ArgumentError, CodegenError, TargetError

CPU_SYMBOLS = ("GOMP", "omp_get", "aligned_alloc", "free", "expf", "erff", "memcpy")


def vector_add(n: int = 1000, threads: int = 128, bind: bool = True) -> PrimFunc:
    """C = A + B with the axis split into blocks of ``threads`` (bound to blockIdx.x/threadIdx.x)."""
    A, B = te.placeholder((n,), name="A"), te.placeholder((n,), name="B")
    C = te.compute((n,), lambda i: A[i] + B[i], name="C")
    s = te.create_schedule(C.op)
    bo, ti = s[C].split(C.op.axis[0], factor=threads)
    if bind:
        s[C].bind(bo, te.thread_axis("blockIdx.x"))
        s[C].bind(ti, te.thread_axis("threadIdx.x"))
    return lower(s, [A, B, C], name="vadd", target="cuda")


def matmul(n: int = 256, tile: int = 16, shared: bool = False) -> PrimFunc:
    """:func:`tests.engine.gpu_kernels.tiled_matmul` lowered for ``cuda``."""
    s, args = tiled_matmul(n, tile, shared)
    return lower(s, args, name="matmul", target="cuda")


def ptx_of(func: PrimFunc, target: str = "cuda") -> str:
    compiled = compile_kernel(func, target)
    assert compiled.object_format == "ptx"
    return compiled.obj.decode()


def called(ptx: str) -> set[str]:
    return set(re.findall(r"call(?:\.uni)?\s+(?:\([^)]*\),\s*)?(\w+)", ptx))


def test_the_target_kind_chooses_the_backend():
    assert isinstance(backend_for(Target("llvm")), CPUBackend)
    assert isinstance(backend_for(Target("cuda -arch=sm_90")), NVPTXBackend)
    assert isinstance(backend_for(Target("nvptx -mcpu=sm_80")), NVPTXBackend)
    with pytest.raises(TargetError, match="no backend compiles for target 'opencl'"):
        backend_for(Target("opencl"))


def test_vector_add_is_a_kernel_of_blocks_and_threads():
    func = vector_add()
    ir_text = emit_llvm(func, "cuda")
    assert 'define ptx_kernel void @"vadd"(ptr addrspace(1) noalias align 16 %"A"' in ir_text
    assert "llvm.nvvm.read.ptx.sreg.ctaid.x" in ir_text and "llvm.nvvm.read.ptx.sreg.tid.x" in ir_text
    compiled = compile_kernel(func, "cuda")
    assert compiled.launch.grid == (8, 1, 1) and compiled.launch.block == (128, 1, 1)
    ptx = compiled.obj.decode()
    assert ".target sm_80" in ptx and ".address_size 64" in ptx
    assert re.search(r"\.entry vadd\(", ptx)
    assert "%ctaid.x" in ptx and "%tid.x" in ptx
    assert re.search(r"ld\.global(\.nc)?\.(b|f)32", ptx) and re.search(r"st\.global\.(b|f)32", ptx)
    assert "add.f32" in ptx or "add.rn.f32" in ptx
    assert not called(ptx), "a vector add calls nothing"
    assert not any(sym in ptx for sym in CPU_SYMBOLS)


def test_the_block_is_the_kernels_launch_bounds():
    """``.maxntid`` is the launch's block, so ptxas keeps each thread's registers within what a block
    of that size may hold: a launch never fails for registers (TVM's ``__launch_bounds__``)."""
    assert ".maxntid 128, 1, 1" in compile_kernel(vector_add(), "cuda").obj.decode()
    ptx = compile_kernel(matmul(), "cuda -arch=sm_90").obj.decode()
    assert re.search(r"\.entry matmul\([^)]*\)\s*\.maxntid 16, 16, 1", ptx)


def test_matmul_reads_two_block_and_two_thread_indices():
    compiled = compile_kernel(matmul(), "cuda -arch=sm_90")
    ptx = compiled.obj.decode()
    assert ".target sm_90" in ptx and re.search(r"\.entry matmul\(", ptx)
    for reg in ("%ctaid.x", "%ctaid.y", "%tid.x", "%tid.y"):
        assert reg in ptx
    assert "%ctaid.z" not in ptx and "%tid.z" not in ptx
    assert compiled.launch.grid == (16, 16, 1) and compiled.launch.block == (16, 16, 1)
    assert compiled.launch.threads_per_block == 256
    assert "fma.rn.f32" in ptx and re.search(r"ld\.global", ptx) and re.search(r"st\.global", ptx)
    assert ".local" not in ptx, "the one-element local accumulator lives in a register"
    assert not called(ptx) and not any(sym in ptx for sym in CPU_SYMBOLS)


def test_shared_caches_live_in_shared_memory_and_fetch_with_the_consumers_threads():
    func = matmul(shared=True)
    compiled = compile_kernel(func, "cuda")
    ptx = compiled.obj.decode()
    assert compiled.launch.block == (16, 16, 1)
    assert "addrspace(3)" in emit_llvm(func, "cuda")
    # one array per block and cache, covering the 16 x 16 tile all threads of the block read
    assert re.search(r"\.shared \.align 16 \.b8 A_shared\[1024\]", ptx)
    assert re.search(r"\.shared \.align 16 \.b8 B_shared\[1024\]", ptx)
    assert re.search(r"st\.shared", ptx) and re.search(r"ld\.shared", ptx)
    # storage sync: before the fetch (the previous step's tiles are still read) and after it
    assert len(re.findall(r"\bbar(rier)?\.sync\s+0;", ptx)) == 2


def test_a_loop_narrower_than_its_launch_axis_runs_in_the_threads_below_its_extent():
    a, b = Buffer("a", (64,), "float32"), Buffer("b", (32,), "float32")
    t0, t1 = Var("t0"), Var("t1")
    body = SeqStmt([For(t0, 0, 64, "serial", BufferStore(a, const(1.0), [t0]), thread_tag="threadIdx.x"),
                    For(t1, 0, 32, "serial", BufferStore(b, const(2.0), [t1]), thread_tag="threadIdx.x")])
    func = PrimFunc("two_widths", [a, b], body)
    ir_text = emit_llvm(func, "cuda")
    assert ir_text.count("icmp slt i32") == 1 and re.search(r"icmp slt i32 %\S+, 32", ir_text)
    assert compile_kernel(func, "cuda").launch.block == (64, 1, 1)


def test_storage_sync_is_a_barrier_and_other_loops_stay_loops():
    buf, out = Buffer("s", (128,), "float32", "shared"), Buffer("out", (128,), "float32")
    tx = Var("tx")
    body = Allocate(buf, SeqStmt([
        BufferStore(buf, const(3.0), [tx]),
        Evaluate(Call("int32", "tvm_storage_sync", [StringImm("shared")])),
        loop("p", 4, "parallel", lambda p: BufferStore(out, BufferLoad(buf, [127 - tx]) + p, [tx])),
    ]))
    func = PrimFunc("sync", [out], For(tx, 0, 128, "serial", body, thread_tag="threadIdx.x"))
    ptx = ptx_of(func)
    assert re.search(r"\bbar(rier)?\.sync\s+0;", ptx)
    assert not any(sym in ptx for sym in CPU_SYMBOLS), "a parallel loop in a kernel is a loop"
    with pytest.raises(CodegenError, match="synchronises 'shared' only"):
        emit_llvm(PrimFunc("warp", [out], Evaluate(Call("int32", "tvm_storage_sync", [StringImm("warp")]))),
                  "cuda")


def test_math_uses_instructions_or_libdevice():
    x, y = Buffer("x", (32,), "float32"), Buffer("y", (32,), "float32")
    t = Var("t")

    def one(name):
        value = Call("float32", name, [BufferLoad(x, [t])])
        store = BufferStore(y, value, [t])
        return PrimFunc(name, [x, y], For(t, 0, 32, "serial", store, thread_tag="threadIdx.x"))

    assert "sqrt.rn.f32" in ptx_of(one("sqrt")) and not called(ptx_of(one("sqrt")))
    assert "__nv_expf" in emit_llvm(one("exp"), "cuda") and "__nv_erff" in emit_llvm(one("erf"), "cuda")
    if libdevice_path() is None:
        pytest.skip("no CUDA toolkit here: libdevice.10.bc is not found")
    # libdevice is linked in and inlined: the PTX is self-contained
    for name, instruction in (("exp", "ex2.approx"), ("erf", "fma.rn.f32"), ("sigmoid", "ex2.approx")):
        ptx = ptx_of(one(name))
        assert not called(ptx) and "__nv_" not in ptx and instruction in ptx, name


def test_bound_loops_change_nothing_on_the_cpu():
    assert emit_llvm(vector_add(bind=True), "llvm") == emit_llvm(vector_add(bind=False), "llvm")
    compiled = compile_kernel(vector_add(), "llvm")
    assert compiled.object_format == "elf" and compiled.launch is None and compiled.obj[:4] == b"\x7fELF"


def test_a_cuda_kernel_is_a_ptx_record_that_only_a_cuda_device_loads():
    kernel = codegen(vector_add(), "cuda")
    assert kernel.object_format == "ptx" and kernel.launch is not None and b".entry" in kernel.obj
    module = build(vector_add(), target="cuda")
    assert module.device == tunecli.cuda(0) and module.launch == kernel.launch
    with pytest.raises(ArgumentError, match="a CUDA GPU runs PTX"):
        tunecli.cuda(0).load(codegen(vector_add(), "llvm"))


def test_what_a_kernel_cannot_hold_is_one_clear_error():
    with pytest.raises(TargetError, match="'sm80' in target 'cuda -arch=sm80' is not an SM architecture"):
        compile_kernel(vector_add(), "cuda -arch=sm80")
    a = Buffer("a", (8,), "float32")
    tmp = Buffer("tmp", (8,), "float32")
    t = Var("t")
    body = For(t, 0, 8, "serial", Allocate(tmp, SeqStmt([BufferStore(tmp, const(1.0), [t]),
                                                         BufferStore(a, BufferLoad(tmp, [t]), [t])])),
               thread_tag="threadIdx.x")
    with pytest.raises(CodegenError, match="temporary 'tmp' of global_tmp has scope 'global'"):
        emit_llvm(PrimFunc("global_tmp", [a], body), "cuda")
    n = Var("n")
    dynamic = For(t, 0, n, "serial", BufferStore(a, const(1.0), [t]), thread_tag="threadIdx.x")
    with pytest.raises(CodegenError, match="bound to threadIdx.x but its extent n is not a constant"):
        emit_llvm(PrimFunc("dynamic", [a], dynamic), "cuda")


@pytest.mark.skipif(ptxas_path() is None, reason="ptxas (CUDA toolkit or nvidia-cuda-nvcc) is not installed")
@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_ptxas_accepts_the_kernels(tmp_path, arch):
    x, y = Buffer("x", (32,), "float32"), Buffer("y", (32,), "float32")
    t = Var("t")
    math = PrimFunc("math", [x, y], For(t, 0, 32, "serial", BufferStore(
        y, Call("float32", "exp", [BufferLoad(x, [t])]) + Call("float32", "erf", [BufferLoad(x, [t])]), [t]),
        thread_tag="threadIdx.x"))
    for func in (vector_add(), matmul(), matmul(shared=True)) + ((math,) if libdevice_path() else ()):
        path = tmp_path / f"{func.name}_{arch}.ptx"
        path.write_bytes(compile_kernel(func, f"cuda -arch={arch}").obj)
        cubin = path.with_suffix(".cubin")
        proc = subprocess.run([str(ptxas_path()), f"-arch={arch}", "-v", str(path), "-o", str(cubin)],
                              capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, proc.stderr
        assert "0 bytes spill stores" in proc.stderr


def test_vectorized_loops_are_128_bit_loads_and_stores():
    func = reversed_copy()
    assert "ptr addrspace(1) noalias align 16" in emit_llvm(func, "cuda")
    ptx = ptx_of(func)
    assert re.search(r"ld\.global(\.nc)?\.v4\.(b|f)32", ptx), "the fetch reads 4 floats at once"
    assert re.search(r"st\.shared\.v4\.(b|f)32", ptx) and re.search(r"st\.global\.v4\.(b|f)32", ptx)
    assert len(re.findall(r"\bbar(rier)?\.sync\s+0;", ptx)) == 1
