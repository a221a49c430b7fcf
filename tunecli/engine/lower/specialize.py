"""Symbolic sizes (``te.var`` extents) given values: the schedule copied with the sizes substituted.

A schedule over tensors of symbolic shape lowers to a loop nest over those sizes (for printing),
but a compiled kernel has constant extents.  :class:`SizedKernel` is what ``build`` returns for
such a schedule: called on arrays, it reads the sizes off the arguments' shapes, compiles the
schedule specialised to them once per distinct set of sizes, and runs that kernel, so a TVM
script's ``fadd = tvm.build(s, [A, B, C])`` with ``n = te.var("n")`` runs on arrays of any ``n``.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from typing import Any, Protocol

from tunecli.engine.ir import expr as E
from tunecli.engine.ir.simplify import simplify
from tunecli.engine.ir.visitor import post_order
from tunecli.engine.schedule.schedule import Schedule
from tunecli.engine.te.operation import ComputeOp, PlaceholderOp
from tunecli.engine.te.tensor import ConstExtent, IterVar, Range, Tensor
from tunecli.errors import ArgumentError, LoweringError


class Kernel(Protocol):
    """What a compiled schedule offers: a call on arrays and TVM's timing function."""

    entry_name: str

    def __call__(self, *arrays: Any) -> None: ...

    def time_evaluator(self, *args: Any, **kwargs: Any) -> Callable[..., Any]: ...


def size_vars(args: Sequence[Tensor]) -> list[E.Var]:
    """The variables in the shapes of ``args``, in order of first appearance (none: constant shapes)."""
    found: list[E.Var] = []

    def note(node: object) -> None:
        if isinstance(node, E.Var) and all(node is not v for v in found):
            found.append(node)

    for t in args:
        for extent in t.shape:
            if not isinstance(extent, int):
                post_order(extent, note)
    return found


def sizes_of(args: Sequence[Tensor], shapes: Sequence[Sequence[int]], where: str) -> dict[E.Var, int]:
    """Each size variable's value, read off the arguments' array ``shapes`` at the dimensions whose
    extent is that variable alone; ArgumentError naming the argument when a count, rank or size
    disagrees."""
    if len(shapes) != len(args):
        raise ArgumentError(f"{where}: expected {len(args)} arrays, got {len(shapes)}")
    values: dict[E.Var, int] = {}
    for t, shape in zip(args, shapes, strict=True):
        if len(shape) != len(t.shape):
            raise ArgumentError(f"{where}: argument {t.name} has {len(t.shape)} dimensions, the array "
                                f"{len(shape)}")
        for extent, got in zip(t.shape, shape, strict=True):
            if isinstance(extent, E.Var):
                if values.setdefault(extent, int(got)) != int(got):
                    raise ArgumentError(f"{where}: size {extent.name} is {values[extent]} by one argument "
                                        f"and {got} by {t.name}")
    missing = [v.name for v in size_vars(args) if v not in values]
    if missing:
        raise ArgumentError(f"{where}: sizes {missing} appear only inside expressions of the arguments' "
                            "shapes; give each its own dimension in some argument")
    return values


def specialize(sch: Schedule, args: Sequence[Tensor], sizes: dict[E.Var, int]
               ) -> tuple[Schedule, list[Tensor]]:
    """A copy of ``sch`` and ``args`` with each size variable replaced by its value: constant
    shapes, loop domains and bodies, every primitive applied as in ``sch``."""
    memo: dict[int, Any] = {id(v): E.IntImm(n) for v, n in sizes.items()}
    new_sch, new_args = copy.deepcopy((sch, list(args)), memo)
    # the stage map is keyed by the operations' ids: key it by the copies'
    new_sch.stage_map = {id(memo[key]): stage for key, stage in new_sch.stage_map.items()}
    for op in new_sch.operations():
        if isinstance(op, PlaceholderOp):
            op.shape = tuple(_constant(s, op.name) for s in op.shape)
        if isinstance(op, ComputeOp):
            for iv in op.axis + op.reduce_axis:
                _fold_domain(iv, op.name)
        for t in (op.output(i) for i in range(op.num_outputs)):
            t.shape = tuple(_constant(s, t.name) for s in t.shape)
    for st in new_sch.stages:
        for iv in st.all_iter_vars:
            _fold_domain(iv, st.name)
    return new_sch, new_args


def _fold_domain(iv: IterVar, where: str) -> None:
    if iv.dom is not None:
        iv.dom = Range(_constant(iv.dom.min, where), _constant(iv.dom.extent, where))


def _constant(extent: int | E.Expr, where: str) -> int:
    if isinstance(extent, int):
        return extent
    folded = simplify(extent)
    if not isinstance(folded, E.IntImm):
        raise LoweringError(f"{where}: extent {extent} is not constant once the sizes are given")
    return ConstExtent(folded.value)


class SizedKernel:
    """A schedule over symbolic sizes, compiled for the sizes of the arrays it is called on (one
    kernel per distinct set of sizes, kept)."""

    def __init__(self, sch: Schedule, args: Sequence[Tensor], name: str,
                 compile_fn: Callable[[Schedule, list[Tensor]], Kernel]):
        self.sch, self.args, self.entry_name = sch, list(args), name
        self.sizes = size_vars(self.args)
        self._compile = compile_fn
        self._kernels: dict[tuple[int, ...], Kernel] = {}

    def specialized(self, arrays: Sequence[Any]) -> Kernel:
        """The kernel for the sizes of ``arrays`` (the call's arguments), compiled on first use."""
        values = sizes_of(self.args, [tuple(a.shape) for a in arrays], f"kernel {self.entry_name!r}")
        key = tuple(values[v] for v in self.sizes)
        if key not in self._kernels:
            sch, args = specialize(self.sch, self.args, values)
            self._kernels[key] = self._compile(sch, args)
        return self._kernels[key]

    def __call__(self, *arrays: Any) -> None:
        """Run the kernel for these arrays' sizes (outputs written in place)."""
        self.specialized(arrays)(*arrays)

    def time_evaluator(self, *args: Any, **kwargs: Any) -> Callable[..., Any]:
        """TVM's timing function (``Module.time_evaluator``'s forms), timing the kernel of the
        sizes it is called on."""
        def evaluate(*arrays: Any) -> Any:
            return self.specialized(arrays).time_evaluator(*args, **kwargs)(*arrays)

        return evaluate

    def _per_size(self, what: str) -> LoweringError:
        names = ", ".join(v.name for v in self.sizes)
        return LoweringError(f"kernel {self.entry_name!r}: {what} needs one compiled kernel, and this one is "
                             f"compiled per value of its symbolic sizes ({names}); build the schedule with "
                             "constant sizes for that")

    def get_source(self, fmt: str = "ll") -> str:
        """Refused (LoweringError): there is no single kernel's source."""
        raise self._per_size("get_source")

    def save(self, path: object) -> None:
        """Refused (LoweringError): there is no single object file."""
        raise self._per_size("save")

    def export_library(self, file_name: object, *args: object, **kwargs: object) -> None:
        """Refused (LoweringError): there is no single library."""
        raise self._per_size("export_library")

    def __repr__(self) -> str:
        names = ", ".join(v.name for v in self.sizes)
        return f"SizedKernel({self.entry_name!r}, sizes {names}; {len(self._kernels)} compiled)"
