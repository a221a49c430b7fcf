"""What codegen hands over: :class:`CompiledKernel` (object, entry symbol, arguments, target).

The record is the boundary between the compiler and the runtime (``tunecli.engine.runtime``):
codegen fills it, a device loads and launches it, and a build worker sends its fields to the
measurement worker.  :class:`ArgSpec` is the kernel's calling convention, one per pointer argument.
"""

from __future__ import annotations

from dataclasses import dataclass

from tunecli.engine.target import Target


@dataclass(frozen=True)
class ArgSpec:
    """One kernel argument: its name, static shape, dtype string, and whether the kernel writes it."""

    name: str
    shape: tuple[int, ...]
    dtype: str
    is_output: bool = False


@dataclass(frozen=True)
class CompiledKernel:
    """One compiled kernel: ``void entry_name(void* arg0, void* arg1, ...)`` in an object file.

    Attributes
    ----------
    obj : bytes
        Relocatable object file for ``target``.
    entry_name : str
        Symbol of the kernel in the object.
    arg_specs : tuple of ArgSpec
        The arguments, in call order.
    target : Target
        What the object was compiled for.
    ir_text : str or None
        Optimised LLVM IR (None for an object built elsewhere).
    """

    obj: bytes
    entry_name: str
    arg_specs: tuple[ArgSpec, ...]
    target: Target
    ir_text: str | None = None
