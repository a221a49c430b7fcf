"""Outlining of ``parallel`` loops into functions run by libgomp's ``GOMP_parallel``.

For the outermost parallel loop of a kernel, codegen emits

* ``<entry>_par<k>_body(ptr noalias buf..., value..., begin, end)``: the loop over
  ``[begin, end)`` (buffers arrive as ``noalias`` arguments, so alias analysis stays as good as
  in the kernel itself);
* ``<entry>_par<k>(ptr closure)``: reads the captured values from the closure struct, takes its
  static chunk of the iteration range from ``omp_get_thread_num``/``omp_get_num_threads`` and
  calls the body;
* in the kernel: the closure on the stack and ``GOMP_parallel(fn, closure, n, 0)``, where ``n``
  is read from the global ``<entry>__num_threads`` (0 lets libgomp choose; the loader writes
  :func:`tunecli.engine.runtime.openmp.get_num_threads` there).

Parallel loops nested inside the outlined body run serially.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from llvmlite import ir

from tunecli.engine.ir import expr as E
from tunecli.engine.ir import stmt as S
from tunecli.engine.ir.visitor import Visitor

from .llvm_types import I32, PTR, VOID, value_type

if TYPE_CHECKING:
    from .emit_stmt import StmtEmitter

NUM_THREADS_SUFFIX = "__num_threads"


def num_threads_symbol(entry_name: str) -> str:
    """Name of the global holding the thread count of kernel ``entry_name``."""
    return entry_name + NUM_THREADS_SUFFIX


class _Captures(Visitor):
    """Collect the variables and buffers a statement uses, in first-use order."""

    def __init__(self):
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
    """Emit ``s`` (a parallel loop) as an outlined body run by ``GOMP_parallel``."""
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

    # the closure and the function libgomp runs on each thread
    fields = [PTR] * len(buf_list) + val_types + [loop_ty, loop_ty]
    closure_ty = ir.LiteralStructType(fields)
    worker = ir.Function(ctx.module, ir.FunctionType(VOID, [PTR]), name)
    worker.linkage = "internal"
    w = ir.IRBuilder(worker.append_basic_block("entry"))
    data = worker.args[0]
    loaded = [w.load(w.gep(data, [ir.Constant(I32, 0), ir.Constant(I32, k)], inbounds=True,
                           source_etype=closure_ty), typ=t) for k, t in enumerate(fields)]
    w_lo, w_extent = loaded[-2], loaded[-1]
    tid = _cast_int(w, w.call(em.declare("omp_get_thread_num", I32, []), []), loop_ty)
    nthreads = _cast_int(w, w.call(em.declare("omp_get_num_threads", I32, []), []), loop_ty)
    one = ir.Constant(loop_ty, 1)
    chunk = w.sdiv(w.sub(w.add(w_extent, nthreads), one), nthreads)
    start = w.mul(tid, chunk)
    stop = w.add(start, chunk)
    stop = w.select(w.icmp_signed("<", stop, w_extent), stop, w_extent)
    with w.if_then(w.icmp_signed("<", start, stop)):
        w.call(body_fn, loaded[:-2] + [w.add(w_lo, start), w.add(w_lo, stop)])
    w.ret_void()

    # the call site in the kernel
    b = em.builder
    closure = em.alloca(closure_ty, align=16)
    values = [em.buffers[x] for x in buf_list] + [em.vars[v] for v in var_list] + [lo, extent]
    for k, v in enumerate(values):
        b.store(v, b.gep(closure, [ir.Constant(I32, 0), ir.Constant(I32, k)], inbounds=True,
                         source_etype=closure_ty))
    gomp = em.declare("GOMP_parallel", VOID, [PTR, PTR, I32, I32])
    count = b.load(num_threads_global(em), typ=I32)
    b.call(gomp, [worker, closure, count, ir.Constant(I32, 0)])


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
