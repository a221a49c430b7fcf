"""PrimFunc → CompiledKernel: the codegen passes, in order.

1. ``flatten``: multi-dimensional accesses → one row-major index;
2. ``vectorize``: ``vectorized`` loops → Ramp/Broadcast vector code (or serial loops);
3. ``unroll``: ``unrolled`` loops → copies of their body with constant loop variables;
   on a CPU, ``unswitch`` then moves the guards those copies keep (tails of non-dividing
   splits) out of the loops that do not change them;
4. emission of LLVM IR by the shared emitters (``emit_stmt``/``emit_expr``), asking the target's
   backend (``backend_table``) where targets differ: the kernel's declaration, ``parallel`` or
   thread-bound loops, allocations, math functions;
5. the backend's compilation: O3, then an object file (CPU) or PTX text (NVPTX).
"""

from __future__ import annotations

from llvmlite import ir

from tunecli.engine.ir.expr import Broadcast, Ramp
from tunecli.engine.ir.stmt import Buffer, BufferStore, PrimFunc, Stmt
from tunecli.engine.ir.visitor import post_order
from tunecli.engine.target import Target, as_target
from tunecli.engine.transform.flatten import flatten
from tunecli.engine.transform.unroll import unroll
from tunecli.engine.transform.unswitch import unswitch
from tunecli.engine.transform.vectorize import vectorize
from tunecli.errors import CodegenError

from .backend import EmittedKernel
from .backend_table import backend_for
from .compile import Compiled
from .compiled_kernel import ArgSpec, CompiledKernel
from .emit_stmt import FunctionContext, StmtEmitter


def prepare(func: PrimFunc, target: Target | str | None = None) -> PrimFunc:
    """Apply the IR → IR codegen passes (flatten, vectorize, unroll) to ``func`` for ``target``."""
    t = as_target(target)
    natural_lanes = backend_for(t).natural_lanes(t)
    body = unroll(vectorize(flatten(func.body), natural_lanes))
    if not t.is_gpu:  # GPU guards test thread indices; versions would split barriers
        body = unswitch(body)
    return PrimFunc(func.name, func.params, body, func.attrs)


def emit_llvm(func: PrimFunc, target: Target | str | None = None) -> str:
    """LLVM IR text (unoptimised) of ``func``: ``void <name>(ptr noalias, ...)`` on a CPU."""
    return _emit(func, as_target(target)).ir


def compile_kernel(func: PrimFunc, target: Target | str | None = None) -> Compiled:
    """Emit and compile ``func`` for ``target``: an ELF object (``llvm``) or PTX text (``cuda``)."""
    t = as_target(target)
    return backend_for(t).compile(_emit(func, t), t)


def _emit(func: PrimFunc, t: Target) -> EmittedKernel:
    """The LLVM IR of ``func`` for ``t``, built by the shared emitters and ``t``'s backend."""
    backend = backend_for(t)
    if not func.name.isidentifier():
        raise CodegenError(f"codegen: kernel name {func.name!r} is not a valid symbol name")
    seen = set()
    for p in func.params:
        if id(p) in seen:
            raise CodegenError(f"codegen: buffer {p.name!r} appears twice in the parameters of {func.name}")
        seen.add(id(p))
    prepared = prepare(func, t)
    module = ir.Module(name=func.name)
    module.triple = backend.triple(t)
    ctx = FunctionContext(module, func.name, backend, target=t)
    fn = backend.declare_kernel(ctx, prepared)
    em = StmtEmitter(ctx, fn)
    em.buffers.update(zip(func.params, fn.args, strict=True))
    em.stmt(prepared.body)
    em.builder.ret_void()
    return EmittedKernel(func.name, str(module), has_vector_code(prepared.body), ctx.launch)


def has_vector_code(stmt: Stmt) -> bool:
    """True when ``stmt`` holds a vector-typed expression (after vectorization)."""
    return _holds(stmt, (Ramp, Broadcast))


def _holds(node: object, kinds: tuple[type, ...]) -> bool:
    """True when a node of ``kinds`` is in the tree of ``node`` (the walk stops at the first)."""
    if isinstance(node, tuple):
        return any(_holds(item, kinds) for item in node)
    if isinstance(node, kinds):
        return True
    return any(_holds(getattr(node, f), kinds) for f in getattr(node, "_fields", ()))


def stored_buffers(stmt: Stmt) -> set[Buffer]:
    """The buffers ``stmt`` writes (BufferStore targets)."""
    found: set[Buffer] = set()
    post_order(stmt, lambda n: found.add(n.buffer) if isinstance(n, BufferStore) else None)
    return found


def codegen(func: PrimFunc, target: Target | str | None = None) -> CompiledKernel:
    """Compile ``func`` for ``target`` (default: the current target, else the host).

    The result is a record (an ELF object for CPUs, PTX with its launch shape for CUDA);
    ``tunecli.engine.build`` wraps it in a runtime Module, which the target's device loads.
    """
    t = as_target(target)
    compiled = compile_kernel(func, t)
    written = stored_buffers(func.body)
    specs = tuple(ArgSpec(b.name, tuple(b.shape), b.dtype, b in written) for b in func.params)
    return CompiledKernel(compiled.obj, func.name, specs, t, compiled.ir, compiled.object_format,
                          compiled.launch)
