"""Code generation: lowered PrimFunc → LLVM IR → optimised object, as a :class:`CompiledKernel`.

Pipeline (``pipeline.py``): flatten → vectorize → unroll (IR → IR), then emission of LLVM IR by
emitters shared by all targets (``emit_stmt``/``emit_expr``/``emit_intrinsic``), which ask the
target's backend (``backend.py``; ``backend_table.py`` maps target kinds to backends) where
targets differ; then the backend compiles: ``cpu_backend`` (``llvm``: ``parallel`` loops outlined
for the runtime's thread pool, an ELF object through ``compile``) or ``nvptx_backend`` (``cuda``/``nvptx``:
blockIdx/threadIdx loops, PTX text).  Loading and running the object is the runtime's job
(``tunecli.engine.runtime``); ``tunecli.engine.build`` joins the two.

Public names::

    codegen(func, target=None) -> CompiledKernel       # PrimFunc → compiled CPU kernel (a frozen record)
    compile_kernel(func, target=None) -> Compiled      # object (ELF or PTX), IR, launch shape
    emit_llvm(func, target=None) -> str                # unoptimised LLVM IR text
    prepare(func, target=None) -> PrimFunc             # the IR after flatten/vectorize/unroll
    CompiledKernel(obj, entry_name, arg_specs, target, ir_text=None)
    ArgSpec(name, shape, dtype, is_output=False)
"""

from .compiled_kernel import ArgSpec, CompiledKernel
from .pipeline import codegen, compile_kernel, emit_llvm, prepare

__all__ = ["ArgSpec", "CompiledKernel", "codegen", "compile_kernel", "emit_llvm", "prepare"]
