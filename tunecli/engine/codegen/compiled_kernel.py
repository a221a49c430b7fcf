"""What codegen hands over: :class:`CompiledKernel` (object, entry symbol, arguments, target, launch).

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
class LaunchShape:
    """Grid and block extents ``(x, y, z)`` a GPU kernel is launched with."""

    grid: tuple[int, int, int] = (1, 1, 1)
    block: tuple[int, int, int] = (1, 1, 1)

    @property
    def threads_per_block(self) -> int:
        """Threads in one block."""
        x, y, z = self.block
        return x * y * z


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
    object_format : str
        ``elf`` (a relocatable object for a CPU) or ``ptx`` (PTX text for a CUDA device).
    launch : LaunchShape or None
        Grid and block of a GPU kernel; None for a CPU kernel.
    """

    obj: bytes
    entry_name: str
    arg_specs: tuple[ArgSpec, ...]
    target: Target
    ir_text: str | None = None
    object_format: str = "elf"
    launch: LaunchShape | None = None
