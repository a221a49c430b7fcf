"""The NVPTX backend: CUDA kernels as PTX text through LLVM's NVPTX target.

* kernel: ``ptx_kernel void <name>(ptr addrspace(1) noalias align 16 <buffer>, ...)``, the
  buffers in global memory, aligned so that vectorized accesses become ``ld``/``st.v4``;
* loops bound to ``blockIdx.x|y|z`` / ``threadIdx.x|y|z``: the loop variable is ``min`` plus the
  block or thread index (``llvm.nvvm.read.ptx.sreg.ctaid.x`` / ``.tid.x``, PTX ``%ctaid.x`` /
  ``%tid.x``), also where one such loop sits inside another bound to the same axis (a
  cooperative fetch inside the thread loop of its consumer).  The launch shape is the largest
  extent bound to each axis; a loop with a smaller extent runs in the threads below its extent
  only.  Other loops (``vthread``, ``parallel`` ...) are loops in each thread;
* allocations: scope ``shared`` in shared memory (address space 3, one array per block),
  ``local`` on the thread's stack (registers or local memory); a ``global`` temporary would need
  device memory from the host and is refused;
* math: the LLVM intrinsics NVPTX has instructions for (``sqrt``, ``fabs``, ``floor``, ``fma`` ...),
  else libdevice's ``__nv_*`` functions, linked in from the CUDA toolkit's ``libdevice.10.bc``
  (``$CUDA_HOME``, ``/usr/local/cuda`` or the ``nvidia-cuda-nvcc`` wheel) before optimising, so
  the PTX is self-contained;
* launch bounds: the block's extents as the kernel's ``.maxntid``, so that ptxas keeps the
  registers of a thread within what a block of that size may use (the launch never fails for
  registers);
* ``tvm_storage_sync("shared")``: ``llvm.nvvm.barrier0`` (``bar.sync 0``);
* compilation: O3 for ``nvptx64-nvidia-cuda`` and the target's ``-arch`` (default ``sm_80``),
  PTX text.
"""

from __future__ import annotations

import functools
import importlib.util
import os
import re
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import ClassVar

import llvmlite.binding as llvm
from llvmlite import ir

from tunecli.engine.ir import expr as E
from tunecli.engine.ir import stmt as S
from tunecli.engine.ir.visitor import Visitor
from tunecli.engine.target import Target
from tunecli.errors import CodegenError, TargetError

from . import compile as cc
from .backend import Backend, EmittedKernel, Release, declare_pointer_params
from .compiled_kernel import LaunchShape
from .convert import convert
from .emit_expr import ExprEmitter
from .emit_intrinsic import call_library, call_llvm_intrinsic
from .emit_stmt import FunctionContext, StmtEmitter
from .llvm_types import I32, VOID, constant, memory_type

TRIPLE = "nvptx64-nvidia-cuda"
DEFAULT_ARCH = "sm_80"
GLOBAL = 1  # NVPTX address spaces
SHARED = 3
PARAM_ALIGN = 16  # what the kernel may assume of its buffers (the widest vector access)
# thread tag -> (PTX special register, axis)
THREAD_REGISTERS = {
    f"{tag}.{axis}": (reg, axis)
    for tag, reg in (("blockIdx", "ctaid"), ("threadIdx", "tid")) for axis in "xyz"
}
LIBDEVICE = "nvvm/libdevice/libdevice.10.bc"
_NATIVE_MATH = {"sqrt", "fabs", "floor", "ceil", "trunc", "round", "fma"}


def sm_arch(target: Target) -> str:
    """The SM architecture of ``target``: ``-arch`` (``cuda``) or ``-mcpu`` (``nvptx``), else sm_80."""
    arch = str(target.attrs.get("arch") or target.attrs.get("mcpu") or DEFAULT_ARCH)
    if not re.fullmatch(r"sm_\d+[af]?", arch):
        raise TargetError(f"codegen: {arch!r} in target {str(target)!r} is not an SM architecture "
                          "such as sm_80")
    return arch


class NVPTXBackend(Backend):
    """CUDA GPUs through LLVM's NVPTX target (targets ``cuda`` and ``nvptx``)."""

    name: ClassVar[str] = "nvptx"
    object_format: ClassVar[str] = "ptx"

    def triple(self, target: Target) -> str:
        return TRIPLE

    def natural_lanes(self, target: Target) -> int:
        return 4  # 128-bit vectors, NVPTX's widest loads and stores (ld.v4.f32)

    def declare_kernel(self, ctx: FunctionContext, func: S.PrimFunc) -> ir.Function:
        ctx.launch = launch_shape(func)
        fn = declare_pointer_params(ctx.module, func, ir.PointerType(addrspace=GLOBAL))
        for arg in fn.args:  # cuMemAlloc aligns to 256 bytes: vector accesses can be ld/st.v4
            arg.attributes.align = PARAM_ALIGN
        fn.calling_convention = "ptx_kernel"
        # the block as the kernel's launch bounds (PTX .maxntid, TVM's __launch_bounds__): ptxas then
        # keeps its registers within what a block of that many threads may use
        bounds: list[ir.Value | str] = [fn]
        for axis, threads in zip("xyz", ctx.launch.block, strict=True):
            bounds += [f"maxntid{axis}", I32(threads)]
        ctx.module.add_named_metadata("nvvm.annotations", bounds)
        return fn

    def emit_loop(self, em: StmtEmitter, s: S.For) -> bool:
        if s.thread_tag not in THREAD_REGISTERS:
            return False
        reg, axis = THREAD_REGISTERS[s.thread_tag]
        bld = em.builder
        read = em.declare(f"llvm.nvvm.read.ptx.sreg.{reg}.{axis}", I32, [])
        index = convert(bld, bld.call(read, []), "int32", s.loop_var.dtype)
        value = index
        if not (isinstance(s.min, E.IntImm) and s.min.value == 0):
            value = bld.add(em.loop_bound(s.min, s.loop_var.dtype), index)
        launched = _launched_extent(em.ctx.launch, s.thread_tag)
        with em.binding(s.loop_var, value):
            if s.extent.value < launched:
                with bld.if_then(bld.icmp_signed("<", index, constant(s.loop_var.dtype, s.extent.value))):
                    em.stmt(s.body)
            else:
                em.stmt(s.body)
        return True

    def allocate(self, em: StmtEmitter, buffer: S.Buffer) -> tuple[ir.Value, Release]:
        if buffer.scope == "shared":
            ty = ir.ArrayType(memory_type(buffer.dtype), max(buffer.size, 1))
            name = em.module.get_unique_name(re.sub(r"\W", "_", buffer.name))
            array = ir.GlobalVariable(em.module, ty, name, addrspace=SHARED)
            array.linkage = "internal"
            array.initializer = ir.Constant(ty, ir.Undefined)
            array.align = 16
            array.type = ir.PointerType(addrspace=SHARED)  # opaque pointer, as buffer parameters
            return array, None
        if buffer.scope == "local":
            return em.stack_array(buffer), None
        raise CodegenError(f"codegen: temporary {buffer.name!r} of {em.ctx.entry_name} has scope "
                           f"{buffer.scope!r}; a CUDA kernel holds only 'local' and 'shared' temporaries")

    def math_call(self, em: ExprEmitter, name: str, dtype: str, args: list[ir.Value]) -> ir.Value:
        if name in _NATIVE_MATH:
            return call_llvm_intrinsic(em, name, dtype, args)
        return call_library(em, {32: f"__nv_{name}f", 64: f"__nv_{name}"}, dtype, args)

    def target_call(self, em: ExprEmitter, e: E.Call) -> ir.Value | None:
        if e.name != "tvm_storage_sync":
            return None
        scope = e.args[0].value if e.args and isinstance(e.args[0], E.StringImm) else None
        if scope != "shared":
            raise CodegenError(f"codegen: {e} synchronises scope {scope!r}; the NVPTX backend "
                               "synchronises 'shared' only")
        em.builder.call(em.declare("llvm.nvvm.barrier0", VOID, []), [])
        return constant(e.dtype, 0)

    def compile(self, kernel: EmittedKernel, target: Target) -> cc.Compiled:
        tm = cc.target_machine(TRIPLE, sm_arch(target), "")
        link = _link_libdevice(kernel.name) if "__nv_" in kernel.ir else None
        with cc.LOCK:
            mod = cc.optimise(kernel.ir, tm, TRIPLE, slp=not kernel.vector_code, link=link)
            ptx = tm.emit_assembly(mod)
            return cc.Compiled(str(mod), ptx.encode(), TRIPLE, self.object_format, kernel.launch)


class _ThreadExtents(Visitor):
    """The largest constant extent bound to each block/thread axis."""

    def __init__(self, entry: str) -> None:
        self.entry = entry
        self.extents: dict[str, int] = {}

    def visit_For(self, s: S.For) -> None:
        tag = s.thread_tag
        if tag in THREAD_REGISTERS:
            if not isinstance(s.extent, E.IntImm):
                raise CodegenError(f"codegen: loop {s.loop_var.name} of {self.entry} is bound to {tag} "
                                   f"but its extent {s.extent} is not a constant")
            self.extents[tag] = max(self.extents.get(tag, 1), s.extent.value)
        self.generic_visit(s)


def launch_shape(func: S.PrimFunc) -> LaunchShape:
    """Grid and block of ``func``: per axis, the largest extent of the loops bound to it (else 1)."""
    walker = _ThreadExtents(func.name)
    walker.visit(func.body)
    ext = walker.extents
    return LaunchShape(tuple(ext.get(f"blockIdx.{a}", 1) for a in "xyz"),
                       tuple(ext.get(f"threadIdx.{a}", 1) for a in "xyz"))


def _launched_extent(launch: LaunchShape | None, tag: str) -> int:
    assert launch is not None  # set by declare_kernel
    dims = launch.grid if tag.startswith("blockIdx") else launch.block
    return dims["xyz".index(tag[-1])]


def _toolkit_file(relative: str) -> Path | None:
    """``relative`` in a CUDA toolkit: ``$CUDA_HOME``, ``$CUDA_PATH``, ``/usr/local/cuda`` or
    NVIDIA's wheels (``nvidia-cuda-nvcc``: ``nvidia/cu13``, ``nvidia/cuda_nvcc``)."""
    roots = [os.environ.get(v) for v in ("CUDA_HOME", "CUDA_PATH")] + ["/usr/local/cuda"]
    spec = importlib.util.find_spec("nvidia")
    for location in (spec.submodule_search_locations or []) if spec is not None else []:
        roots += [str(Path(location) / "cu13"), str(Path(location) / "cuda_nvcc")]
    for root in roots:
        if root and (Path(root) / relative).is_file():
            return Path(root) / relative
    return None


def libdevice_path() -> Path | None:
    """The CUDA toolkit's ``libdevice.10.bc``, or None when no toolkit is found."""
    return _toolkit_file(LIBDEVICE)


def ptxas_path() -> Path | None:
    """NVIDIA's PTX assembler (``ptxas`` on the PATH, else in a toolkit), or None."""
    found = shutil.which("ptxas")
    return Path(found) if found else _toolkit_file("bin/ptxas")


def _link_libdevice(entry: str) -> Callable[[llvm.ModuleRef], None]:
    path = libdevice_path()
    if path is None:
        raise CodegenError(f"codegen: kernel {entry} calls libdevice math (__nv_*) but {LIBDEVICE} was not "
                           "found; set CUDA_HOME to a CUDA toolkit or `pip install nvidia-cuda-nvcc`")

    def link(mod: llvm.ModuleRef) -> None:
        lib = llvm.parse_bitcode(_read(path))
        lib.triple, lib.data_layout = mod.triple, mod.data_layout
        mod.link_in(lib)
        for fn in mod.functions:  # keep only what the kernel calls: the rest is dropped by O3
            if fn.name.startswith("__nv_") and not fn.is_declaration:
                fn.linkage = "internal"

    return link


@functools.cache
def _read(path: Path) -> bytes:
    return path.read_bytes()
