"""PrimFunc → CompiledKernel: the codegen passes, in order.

1. ``flatten``: multi-dimensional accesses → one row-major index;
2. ``vectorize``: ``vectorized`` loops → Ramp/Broadcast vector code (or serial loops);
3. ``unroll``: ``unrolled`` loops → copies of their body with constant loop variables;
4. emission of LLVM IR (``emit_stmt``/``emit_expr``; ``parallel`` loops outlined for libgomp);
5. ``compile``: O3 with the loop/SLP vectorizers, object emission for the target.
"""

from __future__ import annotations

from llvmlite import ir

from tunecli.engine.ir.expr import Broadcast, Ramp
from tunecli.engine.ir.stmt import Buffer, BufferStore, PrimFunc, Stmt
from tunecli.engine.ir.visitor import post_order
from tunecli.engine.target import Target, as_target
from tunecli.engine.transform.flatten import flatten
from tunecli.engine.transform.unroll import unroll
from tunecli.engine.transform.vectorize import vectorize
from tunecli.errors import CodegenError

from . import compile as cc
from .compiled_kernel import ArgSpec, CompiledKernel
from .emit_stmt import FunctionContext, StmtEmitter
from .llvm_types import PTR, VOID


def prepare(func: PrimFunc, target: Target | str | None = None) -> PrimFunc:
    """Apply the IR → IR codegen passes (flatten, vectorize, unroll) to ``func`` for ``target``."""
    natural_lanes = max(1, as_target(target).vector_bits // 32)
    body = unroll(vectorize(flatten(func.body), natural_lanes))
    return PrimFunc(func.name, func.params, body, func.attrs)


def emit_llvm(func: PrimFunc, target: Target | str | None = None) -> str:
    """LLVM IR text (unoptimised) of ``func``: ``void <name>(ptr noalias, ...)``."""
    return _emit(func, as_target(target))[0]


def _emit(func: PrimFunc, t: Target) -> tuple[str, bool]:
    """LLVM IR text of ``func`` and whether it holds explicit vector code."""
    if not func.name.isidentifier():
        raise CodegenError(f"codegen: kernel name {func.name!r} is not a valid symbol name")
    seen = set()
    for p in func.params:
        if id(p) in seen:
            raise CodegenError(f"codegen: buffer {p.name!r} appears twice in the parameters of {func.name}")
        seen.add(id(p))
    prepared = prepare(func, t)
    module = ir.Module(name=func.name)
    module.triple = t.llvm_triple
    fn = ir.Function(module, ir.FunctionType(VOID, [PTR] * len(func.params)), func.name)
    for arg, buf in zip(fn.args, func.params, strict=True):
        arg.name = buf.name
        arg.add_attribute("noalias")
    em = StmtEmitter(FunctionContext(module, func.name), fn)
    em.buffers.update(zip(func.params, fn.args, strict=True))
    em.stmt(prepared.body)
    em.builder.ret_void()
    return str(module), has_vector_code(prepared.body)


def has_vector_code(stmt: Stmt) -> bool:
    """True when ``stmt`` holds a vector-typed expression (after vectorization)."""
    found = []
    post_order(stmt, lambda n: found.append(n) if isinstance(n, (Ramp, Broadcast)) else None)
    return bool(found)


def stored_buffers(stmt: Stmt) -> set[Buffer]:
    """The buffers ``stmt`` writes (BufferStore targets)."""
    found: set[Buffer] = set()
    post_order(stmt, lambda n: found.add(n.buffer) if isinstance(n, BufferStore) else None)
    return found


def codegen(func: PrimFunc, target: Target | str | None = None) -> CompiledKernel:
    """Compile ``func`` for ``target`` (default: the current target, else the host).

    The result is a record; ``tunecli.engine.build`` wraps it in a callable runtime Module.
    """
    t = as_target(target)
    text, vector = _emit(func, t)
    compiled = cc.compile_ir(text, t, slp=not vector)
    written = stored_buffers(func.body)
    specs = tuple(ArgSpec(b.name, tuple(b.shape), b.dtype, b in written) for b in func.params)
    return CompiledKernel(compiled.obj, func.name, specs, t, compiled.ir)
