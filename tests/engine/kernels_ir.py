"""Hand-written test kernels: LLVM IR compiled to real host objects with llvmlite.

Each kernel takes three float32[64] pointers ``(a, b, c)`` and is meant to compute ``c = a + b``;
the broken ones crash, hang, compute the wrong answer or write one element past ``c``.
:func:`elf_machine` tells which processor an object file is for.  Test folders import it as
``tests.engine.kernels_ir``.
"""

from __future__ import annotations

import functools
import struct

import llvmlite.binding as llvm
import numpy as np

#: ELF ``e_machine`` codes of the targets the tests compile for.
EM_X86_64, EM_AARCH64 = 62, 183

N = 64
ARG_SPECS = (((N,), "float32"), ((N,), "float32"), ((N,), "float32"))

_LOOP = r"""
define void @{name}(ptr %a, ptr %b, ptr %c) {{
entry:
  br label %loop
loop:
  %i = phi i64 [0, %entry], [%n, %loop]
  %pa = getelementptr float, ptr %a, i64 %i
  %pb = getelementptr float, ptr %b, i64 %i
  %pc = getelementptr float, ptr %c, i64 %i
  %x = load float, ptr %pa
  %y = load float, ptr %pb
  %z = {op} float %x, %y
  store volatile float %z, ptr %pc
  %n = add i64 %i, 1
  %d = icmp eq i64 %n, {end}
  br i1 %d, label %exit, label %loop
exit:
  ret void
}}
"""

VADD = _LOOP.format(name="vadd", op="fadd", end=N)
#: Subtracts instead of adding.
VSUB = _LOOP.format(name="vsub", op="fsub", end=N)
#: Writes c[64], one element past the end of c (reads past a and b too, which is harmless).
OVERRUN = _LOOP.format(name="overrun", op="fadd", end=N + 1)
#: Leaves c[63] unwritten.
SHORT = _LOOP.format(name="short", op="fadd", end=N - 1)

#: Stores to address 0 through an opaque (volatile) pointer: SIGSEGV.
CRASH = r"""
@target = global ptr null
define void @crash(ptr %a, ptr %b, ptr %c) {
entry:
  %p = load volatile ptr, ptr @target
  store volatile float 1.0, ptr %p
  ret void
}
"""

#: Never returns (a volatile load in the loop keeps it from being removed).
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


@functools.cache
def compile_ir(ir_text: str, triple: str | None = None) -> bytes:
    """Compile LLVM IR text to a relocatable object for the host (or for ``triple``)."""
    llvm.initialize_all_targets()
    llvm.initialize_all_asmprinters()
    target = llvm.Target.from_triple(triple or llvm.get_process_triple())
    cpu = "generic" if triple else llvm.get_host_cpu_name()
    machine = target.create_target_machine(cpu=cpu, opt=2, reloc="pic")
    module = llvm.parse_assembly(ir_text)
    module.verify()
    return machine.emit_object(module)


def elf_machine(obj: bytes) -> int:
    """The ``e_machine`` field of an ELF object (which processor it is for)."""
    assert obj[:4] == b"\x7fELF", "not an ELF object"
    return struct.unpack_from("<H", obj, 18)[0]


def vadd_expected(seed: int) -> bytes:
    """Raw bytes of ``a + b`` for the random inputs the measurement makes from ``seed``."""
    rng = np.random.default_rng(seed)
    a = rng.random((N,)).astype("float32")
    b = rng.random((N,)).astype("float32")
    return (a + b).tobytes()
