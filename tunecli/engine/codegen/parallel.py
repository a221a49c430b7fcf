"""Outlining of ``parallel`` loops into chunk functions run by the thread pool.

For the outermost parallel loop of a kernel, codegen emits

* ``<entry>_par<k>_body(ptr noalias buf..., value..., begin, end)``: the loop over
  ``[begin, end)`` (buffers arrive as ``noalias`` arguments, so alias analysis stays as good as
  in the kernel itself);
* ``<entry>_par<k>(ptr closure, i64 begin, i64 end)``: reads the captured values from the closure
  struct and runs iterations ``[begin, end)`` of the loop (offsets from its ``min``);
* in the kernel: the closure on the stack and ``parallel_for(chunk_fn, closure, extent, n)``,
  called through the pointer in the global ``<entry>__parallel_for`` with ``n`` read from the
  global ``<entry>__num_threads``.  The loader writes
  :func:`tunecli.engine.runtime.thread_pool.parallel_for_address` and
  :func:`tunecli.engine.runtime.threads.get_num_threads` there; while the pointer is null or
  ``n`` ≤ 1 the kernel calls the chunk function once on the whole range itself.

The object references no threading library: how chunks are shared among threads is the pool's
business (``runtime/thread_pool.py``).  Parallel loops nested inside the outlined body run serially.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from llvmlite import ir

from tunecli.engine.ir import expr as E
from tunecli.engine.ir import stmt as S
from tunecli.engine.ir.visitor import Visitor

from .llvm_types import I32, I64, PTR, VOID, value_type

if TYPE_CHECKING:
    from .emit_stmt import StmtEmitter

NUM_THREADS_SUFFIX = "__num_threads"
PARALLEL_FOR_SUFFIX = "__parallel_for"
#: ``void fn(ptr closure, i64 begin, i64 end)``: runs iterations ``[begin, end)`` of an outlined loop.
CHUNK_FN_TYPE = ir.FunctionType(VOID, [PTR, I64, I64])
#: ``void parallel_for(fn, ptr closure, i64 extent, i32 nthreads)`` (``runtime.thread_pool``).
PARALLEL_FOR_TYPE = ir.FunctionType(VOID, [ir.PointerType(CHUNK_FN_TYPE), PTR, I64, I32])


def num_threads_symbol(entry_name: str) -> str:
    """Name of the global holding the thread count of kernel ``entry_name``."""
    return entry_name + NUM_THREADS_SUFFIX


def parallel_for_symbol(entry_name: str) -> str:
    """Name of the global holding the thread pool's ``parallel_for`` address for kernel ``entry_name``."""
    return entry_name + PARALLEL_FOR_SUFFIX


class _Captures(Visitor):
    """Collect the variables and buffers a statement uses, in first-use order."""

    def __init__(self) -> None:
        self.vars: dict[E.Var, None] = {}
        self.buffers: dict[S.Buffer, None] = {}

    def visit_Var(self, v: E.Var) -> None:
        self.vars.setdefault(v, None)

    def visit_BufferLoad(self, n: E.BufferLoad) -> None:
        self.buffers.setdefault(n.buffer, None)
        self.generic_visit(n)

    def visit_BufferStore(self, n: S.BufferStore) -> None:
        self.buffers.setdefault(n.buffer, None)
        self.generic_visit(n)

    def visit_Let(self, n: E.Let) -> None:
        self.visit(n.value)
        self.visit(n.body)


def emit_parallel_for(em: StmtEmitter, s: S.For) -> None:
    """Emit ``s`` (a parallel loop) as an outlined chunk function run by the thread pool."""
    ctx = em.ctx
    uses = _Captures()
    uses.visit(s.body)
    var_list = [v for v in uses.vars if v in em.vars]
    buf_list = [b for b in uses.buffers if b in em.buffers]
    index = len(ctx.outlined)
    name = f"{ctx.entry_name}_par{index}"
    ctx.outlined.append(name)
    loop_ty = value_type(s.loop_var.dtype)
    lo = em.loop_bound(s.min, s.loop_var.dtype)
    extent = em.loop_bound(s.extent, s.loop_var.dtype)

    # the body: for loop_var in [begin, end)
    val_types = [em.vars[v].type for v in var_list]
    body_ty = ir.FunctionType(VOID, [PTR] * len(buf_list) + val_types + [loop_ty, loop_ty])
    body_fn = ir.Function(ctx.module, body_ty, f"{name}_body")
    body_fn.linkage = "internal"
    for arg in body_fn.args[:len(buf_list)]:
        arg.add_attribute("noalias")
    child = type(em)(ctx, body_fn, in_parallel=True)
    child.buffers.update(zip(buf_list, body_fn.args[:len(buf_list)], strict=True))
    child.vars.update(zip(var_list, body_fn.args[len(buf_list):-2], strict=True))
    begin, end = body_fn.args[-2], body_fn.args[-1]
    child.emit_range_loop(s.loop_var, begin, end, lambda: child.stmt(s.body), loop_ty)
    child.builder.ret_void()

    # the closure and the chunk function the pool calls: fn(closure, begin, end), offsets from lo
    fields = [PTR] * len(buf_list) + val_types + [loop_ty]
    closure_ty = ir.LiteralStructType(fields)
    chunk_fn = ir.Function(ctx.module, CHUNK_FN_TYPE, name)
    chunk_fn.linkage = "internal"
    chunk_fn.attributes.add("noinline")  # one copy of the loop: the serial path calls it too
    w = ir.IRBuilder(chunk_fn.append_basic_block("entry"))
    data, c_begin, c_end = chunk_fn.args
    loaded = [w.load(w.gep(data, [ir.Constant(I32, 0), ir.Constant(I32, k)], inbounds=True,
                           source_etype=closure_ty), typ=t) for k, t in enumerate(fields)]
    w_lo = loaded[-1]
    w.call(body_fn, loaded[:-1] + [w.add(w_lo, _cast_int(w, c_begin, loop_ty)),
                                   w.add(w_lo, _cast_int(w, c_end, loop_ty))])
    w.ret_void()

    # the call site in the kernel: the pool when one is installed and threads > 1, else serially
    b = em.builder
    closure = em.alloca(closure_ty, align=16)
    values = [em.buffers[x] for x in buf_list] + [em.vars[v] for v in var_list] + [lo]
    for k, v in enumerate(values):
        b.store(v, b.gep(closure, [ir.Constant(I32, 0), ir.Constant(I32, k)], inbounds=True,
                         source_etype=closure_ty))
    count = b.load(num_threads_global(em), typ=I32)
    launch = b.load(parallel_for_global(em), typ=ir.PointerType(PARALLEL_FOR_TYPE))
    extent64 = _cast_int(b, extent, I64)
    pooled = b.and_(b.icmp_signed(">", count, ir.Constant(I32, 1)),
                    b.icmp_unsigned("!=", b.ptrtoint(launch, I64), ir.Constant(I64, 0)))
    with b.if_else(pooled) as (then, otherwise):
        with then:
            b.call(launch, [chunk_fn, closure, extent64, count])
        with otherwise:
            with b.if_then(b.icmp_signed(">", extent64, ir.Constant(I64, 0))):
                b.call(chunk_fn, [closure, ir.Constant(I64, 0), extent64])


def parallel_for_global(em: StmtEmitter) -> ir.GlobalVariable:
    """The module's ``<entry>__parallel_for`` global (created on first use, initially null)."""
    ctx = em.ctx
    name = parallel_for_symbol(ctx.entry_name)
    if name not in ctx.module.globals:
        g = ir.GlobalVariable(ctx.module, PTR, name)
        g.initializer = ir.Constant(PTR, None)
        g.align = 8
    return ctx.module.globals[name]


def num_threads_global(em: StmtEmitter) -> ir.GlobalVariable:
    """The module's ``<entry>__num_threads`` global (created on first use, initially 0)."""
    ctx = em.ctx
    if ctx.num_threads is None:
        g = ir.GlobalVariable(ctx.module, I32, num_threads_symbol(ctx.entry_name))
        g.initializer = ir.Constant(I32, 0)
        g.align = 4
        ctx.num_threads = g
    return ctx.num_threads


def _cast_int(b: ir.IRBuilder, v: ir.Value, ty: ir.Type) -> ir.Value:
    if v.type == ty:
        return v
    return b.sext(v, ty) if ty.width > v.type.width else b.trunc(v, ty)
