"""Operator strategies: how one operator is computed, scheduled and checked on one kind of target.

A :class:`Strategy` is one row of the strategy table (``registry.STRATEGIES``), keyed by the
operator (``"conv2d_nchw"``) and a target key (``"cpu"``, later ``"arm_cpu"``, ``"cuda"``), as
TVM's ``conv2d_strategy`` registers ``conv2d_nchw.x86`` for ``cpu``.  Its parts stay separate:

``declare(*template_args) -> OpCall``
    The template's arguments (its signature names them: ``M, N, K, dtype="float32"``) as an
    operator call: input placeholders and the operator's attributes.
``compute(cfg, *inputs, **attrs) -> outputs``
    The operator on any input tensors (placeholders, or a graph's tensors); defines the knobs it
    needs on ``cfg`` and counts FLOPs; returns the tensors named by ``outputs``.
``schedule(cfg, outs, epilogue=None) -> Schedule``
    Schedules the anchor op that produced ``outs``.  With ``epilogue`` (an injective stage that
    consumes ``outs``, e.g. ``relu(conv + bias)``) the schedule is created for the epilogue, the
    injective stages between the two are inlined and the epilogue is computed where the
    anchor's output would have been written, so the fused kernel writes memory once.
``reference(*input_arrays, **attrs)``
    numpy: the expected outputs.
``baseline`` (optional)
    numpy's way of computing the operator in the kernel's dtype, which ``apply`` times beside
    the tuned kernel (``ops.baseline``).
``pack(cfg, call) -> OpCall`` (optional)
    The kernel's inputs in the layout the config chooses.  TVM's NCHWc templates name the
    logical tensors in their workload (``data [N, C, H, W]``) while their kernels take blocked
    ones (``data [N, C/ic_bn, H, W, ic_bn]``, the kernel pre-packed) whose block sizes are knobs;
    ``pack`` defines those knobs and returns placeholders of the blocked shapes.  A graph layer
    transforms its tensors to these layouts (the weights once, at build time) instead.
    ``dense.x86``'s kernel takes its weight in panels the same way; a graph gives it ``[N, K]``
    and the packing stage of a constant weight is evaluated at build time (``constant_stages``),
    so a tuned cost never includes a transformation the network does not run per call.

The autotvm template of a strategy is ``schedule(cfg, compute(cfg, *declare(*args)))`` with the
kernel arguments ``inputs + outputs``.  A graph layer uses the same row with its own tensors::

    strategy = STRATEGIES.select("conv2d_nchw", target)
    outs = strategy.compute(cfg, data, kernel, **attrs)       # cfg: the tuned config of the task
    fused = relu(bias_add(outs[0], bias))                      # the group's injective epilogue
    sch = strategy.schedule(cfg, outs, epilogue=fused)
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING, TypeAlias

from tunecli.engine import te
from tunecli.engine.ops.baseline import Baseline
from tunecli.engine.target import Target
from tunecli.engine.task.space import ConfigSpace
from tunecli.engine.task.task import ReferenceFunc, TemplateResult, deserialize_args
from tunecli.engine.task.workload_args import TaskArg
from tunecli.engine.task.workload_flop import WorkloadFlop
from tunecli.errors import InstantiationError

if TYPE_CHECKING:
    from tunecli.engine.schedule import Schedule

_NO_DEFAULT = inspect.Parameter.empty

#: An operator's keyword attributes (stride, padding, out_dtype...), each of the operator's own type.
OpAttrs: TypeAlias = "Mapping[str, object]"
#: What an operator's ``compute`` returns: its output tensor, or a tuple of them.
ComputeResult: TypeAlias = "te.Tensor | tuple[te.Tensor, ...]"


@dataclass(frozen=True)
class OpCall:
    """An operator applied to inputs: what a template's arguments describe.

    Attributes
    ----------
    inputs : tuple of te.Tensor
        The operator's input tensors, in kernel-argument order.
    attrs : dict
        Keyword attributes of both ``compute`` and ``reference`` (stride, padding, out_dtype...).
    """

    inputs: tuple[te.Tensor, ...]
    attrs: OpAttrs = field(default_factory=dict)


@dataclass(frozen=True)
class Strategy:
    """One implementation of an operator for one target key (see the module docstring).

    Attributes
    ----------
    op : str
        Operator name, e.g. ``"conv2d_nchw"``.
    target_key : str
        A target key this implementation serves (``"cpu"``, ``"arm_cpu"``, ``"cuda"``).
    name : str
        The autotvm template (task) name, e.g. ``"conv2d_nchw.x86"``.
    declare : callable
        ``declare(*template_args) -> OpCall``; its signature gives the template's argument names
        and defaults.
    compute : callable
        ``compute(cfg, *inputs, **attrs) -> tensor or tuple of tensors``.
    schedule : callable
        ``schedule(cfg, outs, epilogue=None) -> Schedule``.
    reference : callable
        ``reference(*input_arrays, **attrs) -> array or tuple of arrays``.
    outputs : tuple of str
        Names of the tensors ``compute`` returns (the kernel's output arguments, after the inputs).
    summary : str
        One line for the template table of the README.
    plevel : int
        Priority among the implementations of one operator for one target key (highest first).
    pack : callable, optional
        ``pack(cfg, call) -> OpCall``: the kernel's inputs in the layout the config chooses (see
        the module docstring); None when ``declare``'s inputs are the kernel's.
    baseline : Baseline, optional
        The operator in numpy in the kernel's dtype, a speed baseline (``ops.baseline``); None
        when numpy has no fair counterpart.
    workload_flop : callable, optional
        ``workload_flop(serialized args) -> FLOPs`` by TVM's arithmetic, without tracing
        (``task.workload_flop``): what a record of TVM's log counts when tracing fails for it.
    """

    op: str
    target_key: str
    name: str
    declare: Callable[..., OpCall]
    compute: Callable[..., ComputeResult]
    schedule: Callable[..., Schedule]
    reference: ReferenceFunc
    outputs: tuple[str, ...]
    summary: str = ""
    plevel: int = 10
    pack: Callable[..., OpCall] | None = None
    baseline: Baseline | None = None
    workload_flop: WorkloadFlop | None = None

    @property
    def parameters(self) -> tuple[inspect.Parameter, ...]:
        """The template's parameters (``declare``'s signature)."""
        return tuple(inspect.signature(self.declare).parameters.values())

    @property
    def arg_names(self) -> tuple[str, ...]:
        """Names of the template arguments, in order."""
        return tuple(p.name for p in self.parameters)

    @property
    def defaults(self) -> dict[str, TaskArg]:
        """Default values of the trailing template arguments."""
        return {p.name: p.default for p in self.parameters if p.default is not _NO_DEFAULT}

    def bind(self, args: Sequence[TaskArg] | Mapping[str, TaskArg]) -> tuple[TaskArg, ...]:
        """Complete template arguments given by position or by name, filling defaults.

        Parameters
        ----------
        args : sequence or mapping
            Positional values, or ``{arg_name: value}``; lists become tuples.

        Returns
        -------
        tuple
            One value per ``arg_names`` entry.

        Raises
        ------
        InstantiationError
            Naming unknown, surplus or missing arguments.
        """
        names, defaults = self.arg_names, self.defaults
        if isinstance(args, Mapping):
            unknown = set(args) - set(names)
            if unknown:
                raise InstantiationError(f"{self.name}: unknown arguments {sorted(unknown)}; "
                                         f"expected {names}")
            values = [args.get(a, defaults.get(a, _NO_DEFAULT)) for a in names]
        else:
            given = list(args)
            if len(given) > len(names):
                raise InstantiationError(f"{self.name}: {len(given)} arguments given, expected {names}")
            values = given + [defaults.get(a, _NO_DEFAULT) for a in names[len(given):]]
        missing = [a for a, v in zip(names, values, strict=True) if v is _NO_DEFAULT]
        if missing:
            raise InstantiationError(f"{self.name}: missing arguments {missing}; expected {names}")
        return tuple(_tuples(v) for v in values)

    def outputs_of(self, cfg: ConfigSpace, call: OpCall) -> tuple[te.Tensor, ...]:
        """Run ``compute`` on ``call`` and check it returns the declared outputs."""
        outs = self.compute(cfg, *call.inputs, **call.attrs)
        outs = tuple(outs) if isinstance(outs, (tuple, list)) else (outs,)
        if len(outs) != len(self.outputs):
            raise InstantiationError(f"{self.name}: compute returned {len(outs)} tensors, the strategy "
                                     f"declares the outputs {self.outputs}")
        return outs

    def instantiate(self, cfg: ConfigSpace, *args: TaskArg) -> TemplateResult:
        """The template body: ``(schedule, inputs + outputs)`` for the template arguments ``args``."""
        call = self.kernel_call(cfg, *args)
        outs = self.outputs_of(cfg, call)
        return self.schedule(cfg, outs), [*call.inputs, *outs]

    def kernel_call(self, cfg: ConfigSpace, *args: TaskArg) -> OpCall:
        """The operator call whose inputs are the kernel's: ``declare``, then ``pack`` under ``cfg``."""
        call = self.declare(*args)
        return call if self.pack is None else self.pack(cfg, call)

    def reference_for(self, *args: TaskArg) -> ReferenceFunc:
        """The numpy reference of one task: ``f(*input_arrays) -> expected outputs``.

        A ``functools.partial`` of module-level functions, so it pickles with the task.
        """
        return partial(self.reference, **self._attrs(args))

    def baseline_for(self, *args: TaskArg) -> Baseline | None:
        """The numpy timing baseline of one task, bound to its attributes as ``reference_for`` is
        (None when the row has none)."""
        return None if self.baseline is None else self.baseline.bound(**self._attrs(args))

    def _attrs(self, args: Sequence[TaskArg]) -> OpAttrs:
        """The operator attributes of the template arguments ``args``."""
        return self.declare(*deserialize_args(self.bind(list(args)))).attrs


def _tuples(value: TaskArg | list) -> TaskArg:
    return tuple(_tuples(v) for v in value) if isinstance(value, list) else value


class StrategyTable:
    """Strategies keyed by ``(operator, target key)``, best first; also found by template name."""

    def __init__(self, strategies: Sequence[Strategy] = ()):
        self._by_key: dict[tuple[str, str], list[Strategy]] = {}
        self._by_name: dict[str, Strategy] = {}
        for s in strategies:
            self.add(s)

    def add(self, strategy: Strategy) -> None:
        """Add a row (a name may be used once)."""
        if strategy.name in self._by_name:
            raise InstantiationError(f"strategy {strategy.name!r} is registered twice")
        self._by_name[strategy.name] = strategy
        rows = self._by_key.setdefault((strategy.op, strategy.target_key), [])
        rows.append(strategy)
        rows.sort(key=lambda s: -s.plevel)

    def __iter__(self) -> Iterator[Strategy]:
        return iter(self._by_name.values())

    def __len__(self) -> int:
        return len(self._by_name)

    def __contains__(self, name: object) -> bool:
        return name in self._by_name

    def names(self) -> list[str]:
        """Template names, in registration order."""
        return list(self._by_name)

    def get(self, name: str) -> Strategy:
        """The strategy of template ``name`` (InstantiationError naming the known ones)."""
        try:
            return self._by_name[name]
        except KeyError:
            known = ", ".join(self._by_name)
            raise InstantiationError(f"no built-in template {name!r}; known: {known}") from None

    def keys(self) -> list[tuple[str, str]]:
        """The ``(operator, target key)`` pairs with at least one strategy."""
        return list(self._by_key)

    def candidates(self, op: str, target: str | Target) -> list[Strategy]:
        """The strategies of ``op`` for ``target``: its keys in order, each key's rows best first."""
        keys = (target if isinstance(target, Target) else Target(target)).keys
        return [s for key in keys for s in self._by_key.get((op, key), [])]

    def select(self, op: str, target: str | Target) -> Strategy:
        """The best strategy of ``op`` for ``target`` (InstantiationError when there is none)."""
        found = self.candidates(op, target)
        if not found:
            raise InstantiationError(f"no strategy for operator {op!r} on target {str(target)!r}")
        return found[0]
