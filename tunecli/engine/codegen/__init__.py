"""Code generation: lowered PrimFunc → LLVM IR → optimised object, as a :class:`CompiledKernel`.

Pipeline (``pipeline.py``): flatten → vectorize → unroll (IR → IR), then emission of LLVM IR
(``emit_stmt``/``emit_expr``/``intrinsics``; ``parallel`` loops outlined for libgomp), then O3
and object emission for the target (``compile``).  Loading and running the object is the
runtime's job (``tunecli.engine.runtime``); ``tunecli.engine.build`` joins the two.

Public names::

    codegen(func, target=None) -> CompiledKernel   # PrimFunc → compiled kernel (a frozen record)
    emit_llvm(func, target=None) -> str            # unoptimised LLVM IR text
    prepare(func, target=None) -> PrimFunc         # the IR after flatten/vectorize/unroll
    CompiledKernel(obj, entry_name, arg_specs, target, ir_text=None)
    ArgSpec(name, shape, dtype, is_output=False)
"""

from .compiled_kernel import ArgSpec, CompiledKernel
from .pipeline import codegen, emit_llvm, prepare

__all__ = ["ArgSpec", "CompiledKernel", "codegen", "emit_llvm", "prepare"]
