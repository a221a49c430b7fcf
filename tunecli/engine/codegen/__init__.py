"""Code generation: lowered PrimFunc → LLVM IR → optimised object → callable Module.

Pipeline (``pipeline.py``): flatten → vectorize → unroll (IR → IR), then emission of LLVM IR
(``emit_stmt``/``emit_expr``/``intrinsics``; ``parallel`` loops outlined for libgomp), then O3
and object emission for the target (``compile``).  ``Module`` (``module.py``) calls the object
through ctypes; ``load_module`` does the same for an object built in another process.

Public names::

    codegen(func, target=None) -> Module       # PrimFunc → compiled kernel
    emit_llvm(func, target=None) -> str        # unoptimised LLVM IR text
    prepare(func, target=None) -> PrimFunc     # the IR after flatten/vectorize/unroll
    Module: __call__(*arrays), time_evaluator(number, repeat, min_repeat_ms), object_bytes(),
            save(path), get_source("ll" | "asm"), arg_specs, entry_name, target, func, pointers()
    ArgSpec(name, shape, dtype, is_output=False)
    load_module(obj, entry_name, arg_specs, target=None) -> Module
    set_num_threads(n), get_num_threads()     # threads of parallel loops (TUNECLI_NUM_THREADS)
    time_calls(func, args, number, repeat, min_repeat_ms, warmup=1, before_repeat=None)
"""

from .module import ArgSpec, Module, load_module
from .pipeline import codegen, emit_llvm, prepare
from .runtime import get_num_threads, set_num_threads
from .timer import time_calls

__all__ = ["ArgSpec", "Module", "codegen", "emit_llvm", "get_num_threads", "load_module", "prepare",
           "set_num_threads", "time_calls"]
