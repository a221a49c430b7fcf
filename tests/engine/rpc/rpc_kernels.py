"""Real kernels for the RPC tests: LLVM IR compiled to host object files with llvmlite."""

from __future__ import annotations

import functools

import llvmlite.binding as llvm

from tunecli.engine.measure.arrays import random_arguments

N = 64

VADD = r"""
define void @vadd(ptr %a, ptr %b, ptr %c) {
entry:
  br label %loop
loop:
  %i = phi i64 [0, %entry], [%n, %loop]
  %pa = getelementptr float, ptr %a, i64 %i
  %pb = getelementptr float, ptr %b, i64 %i
  %pc = getelementptr float, ptr %c, i64 %i
  %x = load float, ptr %pa
  %y = load float, ptr %pb
  %z = fadd float %x, %y
  store float %z, ptr %pc
  %n = add i64 %i, 1
  %d = icmp eq i64 %n, 64
  br i1 %d, label %exit, label %loop
exit:
  ret void
}
"""

# Stores to address 0 through an opaque (volatile) pointer: SIGSEGV.
CRASH = r"""
@target = global ptr null
define void @crash(ptr %a, ptr %b, ptr %c) {
entry:
  %p = load volatile ptr, ptr @target
  store volatile float 1.0, ptr %p
  ret void
}
"""

# Never returns (volatile load in a loop, so the loop cannot be removed).
HANG = r"""
@flag = global i32 0
define void @hang(ptr %a, ptr %b, ptr %c) {
entry:
  br label %loop
loop:
  %v = load volatile i32, ptr @flag
  %z = icmp eq i32 %v, 7
  br i1 %z, label %exit, label %loop
exit:
  ret void
}
"""

# Subtracts instead of adding: a wrong answer for vadd's reference outputs.
VSUB = VADD.replace("@vadd", "@vsub").replace("fadd float", "fsub float")

ARG_SPECS = (((N,), "float32"), ((N,), "float32"), ((N,), "float32"))


@functools.cache
def compile_ir(ir_text: str) -> bytes:
    """Compile LLVM IR text to a relocatable object for the host."""
    llvm.initialize_all_targets()
    llvm.initialize_all_asmprinters()
    target = llvm.Target.from_triple(llvm.get_process_triple())
    machine = target.create_target_machine(cpu=llvm.get_host_cpu_name(), opt=2, reloc="pic")
    module = llvm.parse_assembly(ir_text)
    module.verify()
    return machine.emit_object(module)


def vadd_reference(seed: int) -> bytes:
    """Expected output argument of vadd on the device's random inputs for ``seed``."""
    a, b, _ = random_arguments(ARG_SPECS, seed)
    return (a + b).tobytes()
