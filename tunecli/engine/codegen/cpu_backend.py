"""The CPU backend: kernels called from the host, ``parallel`` loops on the thread pool, an ELF object.

* kernel: ``void <name>(ptr noalias <buffer>, ...)``, called through ctypes;
* ``parallel`` loops: outlined into chunk functions the thread pool runs (``parallel.py``); thread-bound loops
  (``blockIdx.x`` ...) run as loops of their kind;
* allocations: on the stack up to :data:`STACK_LIMIT` bytes per scope, else
  ``aligned_alloc``/``free``;
* math: LLVM intrinsics, straight-line SIMD code for ``exp``/``tanh``/``erf``/``sigmoid`` of float32 vectors
  (``vector_math.py``), libm for functions LLVM has no intrinsic for;
* compilation: O3 for the target's triple, CPU and features, a relocatable object (``compile.py``).
"""

from __future__ import annotations

from typing import ClassVar

from llvmlite import ir

from tunecli.engine.ir import expr as E
from tunecli.engine.ir import stmt as S
from tunecli.engine.target import Target

from . import compile as cc
from . import parallel
from .backend import Backend, EmittedKernel, Release, declare_pointer_params
from .emit_expr import ExprEmitter
from .emit_intrinsic import LLVM_INTRINSICS, call_library, call_llvm_intrinsic
from .emit_stmt import ALIGN, FunctionContext, StmtEmitter
from .llvm_types import I64, PTR, VOID, element_bytes, value_type
from .vector_math import emit_erf, emit_exp, emit_sigmoid, emit_tanh, is_vector_f32

STACK_LIMIT = {"local": 512 * 1024, "global": 32 * 1024}  # bytes kept on the stack per scope
_LIBM = {"erf": {32: "erff", 64: "erf"}}
_VECTOR_MATH = {"exp": emit_exp, "tanh": emit_tanh, "erf": emit_erf}


class CPUBackend(Backend):
    """LLVM for the host CPU or a cross CPU target (``llvm -mtriple=...``)."""

    name: ClassVar[str] = "cpu"
    object_format: ClassVar[str] = "elf"

    def triple(self, target: Target) -> str:
        return target.llvm_triple

    def natural_lanes(self, target: Target) -> int:
        return max(1, target.vector_bits // 32)

    def declare_kernel(self, ctx: FunctionContext, func: S.PrimFunc) -> ir.Function:
        return declare_pointer_params(ctx.module, func, PTR)

    def emit_loop(self, em: StmtEmitter, s: S.For) -> bool:
        if s.kind == S.PARALLEL and not em.in_parallel and em.mask is None:
            parallel.emit_parallel_for(em, s)
            return True
        return False

    def allocate(self, em: StmtEmitter, buffer: S.Buffer) -> tuple[ir.Value, Release]:
        nbytes = max(buffer.size, 1) * element_bytes(buffer.dtype)
        if nbytes <= STACK_LIMIT.get(buffer.scope, STACK_LIMIT["global"]):
            return em.stack_array(buffer), None
        rounded = (nbytes + ALIGN - 1) // ALIGN * ALIGN
        alloc = em.declare("aligned_alloc", PTR, [I64, I64])
        free = em.declare("free", VOID, [PTR])
        ptr = em.builder.call(alloc, [ir.Constant(I64, ALIGN), ir.Constant(I64, rounded)])
        return ptr, lambda: em.builder.call(free, [ptr])

    def target_call(self, em: ExprEmitter, e: E.Call) -> ir.Value | None:
        if e.name == "sigmoid" and len(e.args) == 1 and is_vector_f32(value_type(e.dtype)):
            return emit_sigmoid(em, em.expr(e.args[0]))
        return None

    def math_call(self, em: ExprEmitter, name: str, dtype: str, args: list[ir.Value]) -> ir.Value:
        if name in _VECTOR_MATH and is_vector_f32(value_type(dtype)):
            return _VECTOR_MATH[name](em, args[0])
        if name in LLVM_INTRINSICS:
            return call_llvm_intrinsic(em, name, dtype, args)
        return call_library(em, _LIBM[name], dtype, args)

    def compile(self, kernel: EmittedKernel, target: Target) -> cc.Compiled:
        return cc.compile_ir(kernel.ir, target, slp=not kernel.vector_code)
