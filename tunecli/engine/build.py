"""``build`` and ``lower``: a schedule (or a lowered PrimFunc) → a compiled :class:`Module`.

``lower`` is the compiler front's (``tunecli.engine.lower``); ``build`` lowers, runs codegen
(``tunecli.engine.codegen``) for the target and wraps the compiled kernel in a runtime
:class:`~tunecli.engine.runtime.Module`, which runs it on the target's device.
"""

from __future__ import annotations

from collections.abc import Sequence

import tunecli.engine.lower as lowering
from tunecli.engine.codegen import codegen
from tunecli.engine.ir.stmt import PrimFunc
from tunecli.engine.lower.specialize import SizedKernel, size_vars
from tunecli.engine.lower.verify_gpu import check_gpu_code
from tunecli.engine.runtime import Module
from tunecli.engine.schedule import Schedule
from tunecli.engine.target import Target, as_target
from tunecli.engine.te.tensor import Tensor
from tunecli.errors import CodegenError


def lower(sch: Schedule, args: Sequence[Tensor], name: str = "main", simple_mode: bool = False) -> PrimFunc:
    """Lower schedule ``sch`` with arguments ``args`` to a loop nest (``str()`` prints it).

    Parameters
    ----------
    sch : Schedule
        The schedule (``te.create_schedule``).
    args : sequence of Tensor
        The kernel's arguments, in call order.
    name : str
        Name of the lowered function.
    simple_mode : bool
        Accepted for TVM compatibility; the printed form is always the simple one.

    Returns
    -------
    PrimFunc
    """
    return lowering.lower(sch, list(args), name)


def build(sch: Schedule | PrimFunc, args: Sequence[Tensor] | None = None, target: str | Target | None = None,
          name: str = "default_function") -> Module | SizedKernel:
    """Compile a schedule for ``target`` (default: the current target, else the host).

    Parameters
    ----------
    sch : Schedule or PrimFunc
        What to compile; a PrimFunc (already lowered) is compiled as is.
    args : sequence of Tensor
        The kernel's arguments in call order (ignored for a PrimFunc).
    target : str or Target, optional
        For example ``"llvm"``, ``"llvm -mcpu=znver4"``, ``"llvm -mtriple=aarch64-linux-gnu"``.
    name : str
        Symbol of the kernel in the object file.

    Returns
    -------
    Module or SizedKernel
        Callable on arrays of the target's device (numpy arrays for the host); a SizedKernel
        when the arguments' shapes hold symbolic sizes (``te.var``): compiled for the sizes of
        the arrays it is called on.

    Raises
    ------
    InstantiationError
        For a GPU target, when the kernel exceeds the target's limits (threads per block,
        shared memory ...: ``engine.lower.verify_gpu``).
    """
    t = as_target(target)
    if isinstance(sch, PrimFunc):
        func = sch
        symbolic = [p.name for p in func.params if p.is_symbolic]
        if symbolic:
            raise CodegenError(f"build: arguments {symbolic} of {func.name} have symbolic sizes; build the "
                               "schedule itself (its kernel is compiled for the sizes it is called on)")
    else:
        if args is None:
            raise CodegenError("build: the kernel's arguments (args=[...]) are required for a schedule")
        if size_vars(args):
            return SizedKernel(sch, args, name, lambda s, a: build(s, a, t, name))
        func = lowering.lower(sch, list(args), name, t)
    if t.is_gpu:
        check_gpu_code(func, t)
    return Module(codegen(func, t))
