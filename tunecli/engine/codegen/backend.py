"""The points where LLVM code generation differs between targets, as one interface.

The shared emitters (``emit_stmt``, ``emit_expr``, ``emit_intrinsic``) build a kernel's body for
any LLVM target and ask the module's :class:`Backend` wherever targets differ:

* the module's triple, and how the kernel and its buffer parameters are declared
  (``declare_kernel``: calling convention, address space, attributes, launch shape);
* loops a target runs otherwise than one iteration after the other (``emit_loop``: ``parallel``
  loops on a CPU, loops bound to ``blockIdx``/``threadIdx`` on a GPU);
* where an ``Allocate``'d buffer lives (``allocate``: stack, heap, shared memory);
* which math functions exist (``math_call``) and calls only a target has (``target_call``);
* the vector width ``prepare`` vectorizes for, and what compiling yields (``compile``: an ELF
  object, PTX text).

``backend_table.backend_for`` picks the backend of a target's kind.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from llvmlite import ir

from tunecli.engine.ir import expr as E
from tunecli.engine.ir import stmt as S
from tunecli.engine.target import Target

from .compiled_kernel import LaunchShape

if TYPE_CHECKING:
    from .compile import Compiled
    from .emit_expr import ExprEmitter
    from .emit_stmt import FunctionContext, StmtEmitter

# Emitted after the body of an Allocate (e.g. the ``free`` of a heap buffer), or None.
Release = Callable[[], None] | None


@dataclass(frozen=True)
class EmittedKernel:
    """One kernel's unoptimised LLVM IR and what compiling and launching it need.

    Attributes
    ----------
    name : str
        The entry symbol.
    ir : str
        LLVM IR text of the module.
    vector_code : bool
        Whether the body holds explicit vector code (after vectorization).
    launch : LaunchShape or None
        Grid and block of a GPU kernel; None for a CPU kernel.
    """

    name: str
    ir: str
    vector_code: bool
    launch: LaunchShape | None = None


class Backend(ABC):
    """What one LLVM target family decides in code generation; subclasses fill in each point.

    Attributes
    ----------
    name : str
        Short name (``cpu``, ``nvptx``).
    object_format : str
        What ``compile`` produces: ``elf`` (a relocatable object) or ``ptx`` (PTX text).
    """

    name: ClassVar[str] = ""
    object_format: ClassVar[str] = ""

    @abstractmethod
    def triple(self, target: Target) -> str:
        """The LLVM triple of modules built for ``target``."""

    @abstractmethod
    def natural_lanes(self, target: Target) -> int:
        """Lanes of the widest natural vector of 32-bit elements (the width ``prepare`` splits into)."""

    @abstractmethod
    def declare_kernel(self, ctx: FunctionContext, func: S.PrimFunc) -> ir.Function:
        """Declare the kernel of ``func`` (already prepared) in ``ctx.module``: one pointer per buffer.

        A GPU backend also sets ``ctx.launch`` here.
        """

    def emit_loop(self, em: StmtEmitter, s: S.For) -> bool:
        """Emit ``s`` the target's way and return True, or return False for an ordinary loop."""
        return False

    @abstractmethod
    def allocate(self, em: StmtEmitter, buffer: S.Buffer) -> tuple[ir.Value, Release]:
        """Storage for ``buffer`` while its Allocate's body runs, and what to emit after the body."""

    @abstractmethod
    def math_call(self, em: ExprEmitter, name: str, dtype: str, args: list[ir.Value]) -> ir.Value:
        """The float math function ``name`` (``exp``, ``erf``, ``pow``, ...) of ``args`` of ``dtype``."""

    def target_call(self, em: ExprEmitter, e: E.Call) -> ir.Value | None:
        """Emit a call only this target knows (a barrier), or return None when ``e`` is not one."""
        return None

    @abstractmethod
    def compile(self, kernel: EmittedKernel, target: Target) -> Compiled:
        """Optimise ``kernel`` and produce the target's object."""


def declare_pointer_params(module: ir.Module, func: S.PrimFunc, pointer: ir.PointerType) -> ir.Function:
    """``void <func.name>(pointer noalias <buffer>, ...)`` with one argument per buffer of ``func``."""
    fn = ir.Function(module, ir.FunctionType(ir.VoidType(), [pointer] * len(func.params)), func.name)
    for arg, buf in zip(fn.args, func.params, strict=True):
        arg.name = buf.name
        arg.add_attribute("noalias")
    return fn

