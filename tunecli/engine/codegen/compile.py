"""LLVM IR text → optimised module → object file / assembly, for a Target.

One target machine per (triple, cpu, features) is created and cached; all LLVM calls go through
one lock (llvmlite is not re-entrant across threads for a shared target machine).  Optimisation
is LLVM's O3 pipeline (new pass manager) with the loop and SLP vectorizers on (:func:`optimise`,
shared by the backends); :func:`compile_ir` emits the CPU's relocatable object.
"""

from __future__ import annotations

import functools
import subprocess
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass

import llvmlite.binding as llvm

from tunecli.engine.target import Target, as_target
from tunecli.errors import CodegenError, TargetError

from .compiled_kernel import LaunchShape

LOCK = threading.RLock()


@functools.cache
def _init_llvm() -> None:
    llvm.initialize_all_targets()
    llvm.initialize_all_asmprinters()
    llvm.initialize_native_asmparser()


@functools.cache
def target_machine(triple: str, cpu: str, features: str) -> llvm.TargetMachine:
    """The (cached) LLVM target machine for ``triple``/``cpu``/``features``, O3, PIC."""
    _init_llvm()
    try:
        tgt = llvm.Target.from_triple(triple)
    except RuntimeError as err:
        raise TargetError(f"codegen: LLVM cannot compile for triple {triple!r}: {err}") from None
    return tgt.create_target_machine(cpu=cpu, features=features, opt=3, reloc="pic", codemodel="default")


def machine_for(target: Target) -> llvm.TargetMachine:
    """The cached target machine of ``target`` (an ``llvm`` target)."""
    if target.kind != "llvm":
        raise TargetError(f"codegen: only 'llvm' targets compile here, got {str(target)!r}")
    return target_machine(target.llvm_triple, target.llvm_cpu, target.llvm_features)


@dataclass(frozen=True)
class Compiled:
    """Result of compiling one module: optimised IR text and the object.

    Attributes
    ----------
    ir : str
        Optimised LLVM IR text.
    obj : bytes
        The object: a relocatable ELF file (``object_format`` ``elf``) or PTX text (``ptx``).
    triple : str
        The LLVM triple compiled for.
    object_format : str
        ``elf`` or ``ptx``.
    launch : LaunchShape or None
        Grid and block of a GPU kernel; None for a CPU kernel.
    """

    ir: str
    obj: bytes
    triple: str
    object_format: str = "elf"
    launch: LaunchShape | None = None


def optimise(ir_text: str, tm: llvm.TargetMachine, triple: str, slp: bool = True,
             link: Callable[[llvm.ModuleRef], None] | None = None) -> llvm.ModuleRef:
    """Parse and verify ``ir_text`` for ``triple``, then run O3 with the loop (and SLP) vectorizers.

    ``link`` is called on the parsed module before optimising (to link libraries in).  Call with
    :data:`LOCK` held.  Raises CodegenError when the IR does not verify.
    """
    try:
        mod = llvm.parse_assembly(ir_text)
        mod.triple = triple
        mod.data_layout = str(tm.target_data)
        mod.verify()
    except RuntimeError as err:
        raise CodegenError(f"codegen: generated LLVM IR is invalid: {err}") from None
    if link is not None:
        link(mod)
    pto = llvm.create_pipeline_tuning_options(speed_level=3)
    pto.loop_vectorization = True
    pto.slp_vectorization = slp
    pb = llvm.create_pass_builder(tm, pto)
    pm = pb.getModulePassManager()
    pm.run(mod, pb)
    return mod


def compile_ir(ir_text: str, target: Target, slp: bool = True) -> Compiled:
    """Parse, verify, optimise (O3 + vectorizers) and emit an object file for ``target``.

    Parameters
    ----------
    ir_text : str
        LLVM IR of the module (any triple; it is replaced by the target's).
    target : Target
        What to compile for.
    slp : bool
        Run LLVM's SLP vectorizer.  Codegen turns it off for kernels that already hold explicit
        vector code: there it only regroups the scalar remainders of odd-width vector loops into
        shuffles and gathers, which are slower than the scalar code (figures in
        ``benchmarks/README.md``).

    Returns
    -------
    Compiled
        Optimised IR text and relocatable object bytes.
    """
    tm = machine_for(target)
    with LOCK:
        mod = optimise(ir_text, tm, target.llvm_triple, slp)
        obj = tm.emit_object(mod)
        return Compiled(str(mod), bytes(obj), target.llvm_triple)


def assembly(ir_text: str, target: Target) -> str:
    """Assembly of already optimised IR text for ``target`` (no further optimisation)."""
    tm = machine_for(target)
    with LOCK:
        mod = llvm.parse_assembly(ir_text)
        return tm.emit_assembly(mod)


_PROBE = """
import sys
from tunecli.engine.codegen.compile import compile_ir
from tunecli.engine.target import Target
compile_ir("define void @probe() {\\n  ret void\\n}\\n", Target(sys.argv[1]))
"""


@functools.cache
def target_problem(target: str | Target) -> str | None:
    """Why LLVM cannot compile for ``target`` (an unknown CPU, feature or triple), or None.

    LLVM only prints a warning for an unknown ``-mcpu`` and aborts the process on some wrong
    combinations, so the check compiles an empty function in a child process.
    """
    t = as_target(target)
    if t.kind != "llvm" or not (t.mcpu or t.mattr or t.mtriple):
        return None
    proc = subprocess.run([sys.executable, "-c", _PROBE, str(t)], capture_output=True, text=True,
                          timeout=120)
    lines = [line.strip() for line in proc.stderr.splitlines() if line.strip()]
    llvm_says = [line for line in lines if "not a recognized" in line or line.startswith("LLVM ERROR")]
    if llvm_says:
        return "; ".join(dict.fromkeys(llvm_says))
    if proc.returncode != 0:
        if not lines:
            return f"LLVM failed (exit code {proc.returncode})"
        last = lines[-1]
        return last.split(": ", 1)[1] if last.startswith("tunecli.errors.") else last
    return None
