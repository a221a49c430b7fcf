"""Code generation: lowered PrimFunc → LLVM IR → optimised object → callable Module."""

from .module import ArgSpec, Module, load_module
from .pipeline import codegen, emit_llvm, prepare
from .runtime import get_num_threads, set_num_threads
from .timer import time_calls

__all__ = ["ArgSpec", "Module", "codegen", "emit_llvm", "get_num_threads", "load_module", "prepare",
           "set_num_threads", "time_calls"]
