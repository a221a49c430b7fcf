"""Task extraction (TVM's ``autotvm.task.extract_from_program``): the tunable tasks of a network.

The network goes through the build's graph passes (so the tasks are those of the graph that is
built: batch norms folded, constants folded); each call of a requested tunable operator then
names the strategy row the target selects and its template arguments (``op_strategy``), and
each distinct workload becomes one ``autotvm`` task, in the order the network first uses it.
Winograd tasks are opt-in: with ``nn.contrib_conv2d_NCHWc_winograd`` among the requested
operators, each convolution ``AlterOpLayout`` may make a Winograd one (3x3, stride 1) also gives
its ``conv2d_NCHWc_winograd.x86`` task, after its direct one (``nn.conv2d``'s, when requested).
A dense layer also gives its ``dense_pack.x86`` task, after its own (TVM's x86 tasks of a dense
layer are its packed and unpacked templates); ``nn.conv3d`` gives ``conv3d_ncdhw.x86`` tasks and
``nn.conv2d_transpose`` (one group, no dilation) ``conv2d_transpose_nchw.x86`` ones.
:func:`task_occurrences` counts how often each workload occurs.

Such tasks are alternatives: ``relay.build`` runs one of them per call.  :func:`tunable_operators`
says which: one :class:`TunableOperator` per distinct tunable call, with the implementations it
can run and how often the network calls it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass

from tunecli.engine.codegen.backend_table import backend_for
from tunecli.engine.target import Target, as_target
from tunecli.engine.task.task import Task, create
from tunecli.engine.task.workload_args import Workload
from tunecli.errors import GraphError, TargetError, TuneError

from .build_module import optimize
from .graph_expr import ArrayData, Call, Function
from .ir_module import IRModule
from .op_registry import OPS, Op
from .op_strategy import Implementation, dense_pack_implementation, implementation, winograd_implementation
from .ops.conv_winograd import CONV_OP as WINOGRAD_OP
from .traversal import post_order

#: An operator to extract: an ``Op``, its name, or its constructor function (``relay.op.nn.dense``).
OpSpec = Op | str | Callable[..., object]

#: The package of the operator constructors (``relay.op.nn.conv2d`` and the like).
_CONSTRUCTORS_PACKAGE = f"{__package__}.ops."


def _constructor_op_name(constructor: Callable[..., object]) -> str:
    """The operator a constructor function builds (TVM 0.6/0.7 scripts name operators as
    ``relay.op.nn.conv2d``): ``nn.<name>`` or ``<name>``, whichever is registered, ignoring case
    (``contrib_conv2d_nchwc`` builds ``nn.contrib_conv2d_NCHWc``)."""
    name = getattr(constructor, "__name__", "")
    if (getattr(constructor, "__module__", None) or "").startswith(_CONSTRUCTORS_PACKAGE):
        by_lower = {registered.lower(): registered for registered in OPS.names()}
        for candidate in (f"nn.{name}", name):
            if candidate.lower() in by_lower:
                return by_lower[candidate.lower()]
    raise GraphError(f"{constructor!r} is not an operator constructor (name an operator as "
                     "relay.op.get('nn.dense'), 'nn.dense' or relay.op.nn.dense)")


def operator_name(op: OpSpec) -> str:
    """The name of an operator given as an ``Op``, a name, or its constructor function (a
    GraphError for a function that builds no operator; a name is not checked)."""
    if isinstance(op, Op):
        return op.name
    if callable(op):
        return _constructor_op_name(op)
    return str(op)


def _op_names(ops: Iterable[OpSpec] | None) -> set[str] | None:
    if ops is None:
        return None
    names = set()
    for op in ops:
        try:
            name = operator_name(op)
        except GraphError as err:
            raise GraphError(f"extract_from_program: {err}") from None
        if name not in OPS:
            raise GraphError(f"extract_from_program: unknown operator {name!r} in ops")
        names.add(name)
    return names


@dataclass(frozen=True)
class TunableOperator:
    """A distinct tunable operator of a network: the tasks that can implement it and its calls.

    Attributes
    ----------
    implementations : tuple of Implementation
        Its alternative implementations (the call's own row first, then Winograd), of which
        ``relay.build`` runs one; at least one.
    occurrences : int
        Calls of the network that are this operator.
    """

    implementations: tuple[Implementation, ...]
    occurrences: int

    @property
    def workloads(self) -> tuple[Workload, ...]:
        """The workload keys of its implementations' tasks, in order."""
        return tuple(impl.workload for impl in self.implementations)


def _call_implementations(mod: IRModule | Function, params: Mapping[str, ArrayData] | None, target: Target,
                          ops: Iterable[OpSpec] | None) -> Iterator[tuple[Implementation, ...]]:
    """The requested implementations of each tunable call of the optimized network, in execution
    order (calls with none left out)."""
    wanted = _op_names(ops)
    fused = optimize(mod, params)["main"]
    groups = [n.op for n in post_order(fused.body, into_functions=False)
              if isinstance(n, Call) and isinstance(n.op, Function)]
    winograd = wanted is not None and WINOGRAD_OP in wanted
    for node in (n for fn in groups for n in post_order(fn.body, into_functions=False)):
        if not (isinstance(node, Call) and isinstance(node.op, Op) and node.op.strategy_op is not None):
            continue
        own = wanted is None or node.op.name in wanted
        impls = [implementation(node, target) if own else None,
                 winograd_implementation(node, target) if winograd else None,
                 dense_pack_implementation(node, target) if own else None]
        found = tuple(impl for impl in impls if impl is not None)
        if found:
            yield found


def tunable_calls(mod: IRModule | Function, params: Mapping[str, ArrayData] | None, target: Target,
                  ops: Iterable[OpSpec] | None = None) -> list[Implementation]:
    """The implementation of every tunable call of the optimized network, in execution order
    (a call with alternatives gives each of them, in :class:`TunableOperator` order)."""
    return [impl for impls in _call_implementations(mod, params, target, ops) for impl in impls]


def tunable_operators(mod: IRModule | Function, params: Mapping[str, ArrayData] | None, target: Target,
                      ops: Iterable[OpSpec] | None = None) -> list[TunableOperator]:
    """The distinct tunable operators of a network, in the order it first calls them.

    Calls are the same operator when their implementations have the same workloads.

    Parameters
    ----------
    mod, params, target, ops
        As :func:`extract_from_program` takes them (``target`` a Target).

    Returns
    -------
    list of TunableOperator
    """
    found: dict[Workload, tuple[Implementation, ...]] = {}
    counts: dict[Workload, int] = {}
    for impls in _call_implementations(mod, params, target, ops):
        key = tuple(impl.workload for impl in impls)
        found.setdefault(key, impls)
        counts[key] = counts.get(key, 0) + 1
    return [TunableOperator(impls, counts[key]) for key, impls in found.items()]


def _tvm06_argument_order(target: object, target_host: object, ops: object
                          ) -> tuple[str | Target | None, str | Target | None, Iterable[OpSpec] | None]:
    """``(target, target_host, ops)`` of a call in TVM 0.6's argument order, ``(mod, params, ops,
    target[, target_host])``: operators (a list or tuple) where the target goes are the ops, and
    the two arguments after them the target and its host."""
    if not isinstance(target, (list, tuple)):
        return target, target_host, ops  # type: ignore[return-value]
    if ops is not None and not isinstance(ops, (str, Target)):
        raise GraphError(f"extract_from_program: operators given twice: {target!r} in place of the target "
                         f"and ops={ops!r}")
    return target_host, ops, target  # type: ignore[return-value]


def extract_from_program(mod: IRModule | Function, params: Mapping[str, ArrayData] | None,
                         target: str | Target | None, target_host: str | Target | None = None,
                         ops: Iterable[OpSpec] | None = None, mod_name: str = "default",
                         include_simple_tasks: bool = False) -> list[Task]:
    """The distinct tunable tasks of a network.

    Parameters
    ----------
    mod : IRModule or Function
        The network (``mod["main"]``).
    params : mapping of str to array, optional
        Its weights (bound as constants, as ``relay.build`` does).
    target : str or Target
    target_host : optional
    ops : iterable of Op, str or function, optional
        Only calls of these operators (``relay.op.get("nn.conv2d")``, ``"nn.conv2d"``, or, as TVM
        0.6/0.7 scripts give them, ``relay.op.nn.conv2d``); default every tunable one.
        ``nn.contrib_conv2d_NCHWc_winograd`` adds the Winograd tasks of the 3x3, stride-1
        convolutions (opt-in: TVM's x86 tasks have none).
    mod_name, include_simple_tasks
        Accepted for TVM compatibility.

    TVM 0.6's argument order, ``(mod, params, ops, target[, target_host])``, is understood too.

    Returns
    -------
    list of Task
    """
    target, target_host, ops = _tvm06_argument_order(target, target_host, ops)
    t = compilable_target(target, "extract_from_program")
    return list(operator_tasks(tunable_operators(mod, params, t, ops), t, target_host).values())


def compilable_target(target: str | Target | None, caller: str) -> Target:
    """``target`` as a Target when a backend here compiles for it; otherwise one TargetError
    naming ``caller`` (tasks for such a target would extract, then fail at every build)."""
    t = as_target(target)
    try:
        backend_for(t)
    except TargetError as err:
        raise TargetError(f"{caller}: {err}") from None
    return t


def extract_from_multiple_program(mods: Sequence[IRModule | Function],
                                  params: Sequence[Mapping[str, ArrayData] | None],
                                  target: str | Target | None, target_host: str | Target | None = None,
                                  ops: Iterable[OpSpec] | None = None) -> list[Task]:
    """The distinct tunable tasks of several networks (``mods[i]`` with weights ``params[i]``):
    each workload once, in the order the networks first call it (TVM 0.6's argument order
    ``(mods, params, ops, target[, target_host])`` is understood too)."""
    target, target_host, ops = _tvm06_argument_order(target, target_host, ops)
    if len(mods) != len(params):
        raise GraphError(f"extract_from_multiple_program: {len(mods)} networks and {len(params)} sets of "
                         "parameters")
    t = compilable_target(target, "extract_from_multiple_program")
    wanted = list(ops) if ops is not None else None
    tasks: dict[Workload, Task] = {}
    for mod, weights in zip(mods, params, strict=True):
        for key, task in operator_tasks(tunable_operators(mod, weights, t, wanted), t, target_host).items():
            tasks.setdefault(key, task)
    return list(tasks.values())


def operator_tasks(operators: Iterable[TunableOperator], target: Target,
                   target_host: str | Target | None = None) -> dict[Workload, Task]:
    """One task per distinct workload of the operators' implementations, by workload, in order
    (the tasks :func:`extract_from_program` returns).

    Raises
    ------
    TuneError
        Naming the template and the workload, when a template rejects a call of the network.
    """
    tasks: dict[Workload, Task] = {}
    for op in operators:
        for impl in op.implementations:
            if impl.workload not in tasks:
                try:
                    tasks[impl.workload] = create(impl.task_name, impl.args, target, target_host)
                except TuneError as err:
                    raise TuneError(f"template {impl.task_name} rejects {impl.workload[1:]}: {err}") from err
    return tasks


def task_occurrences(mod: IRModule | Function, params: Mapping[str, ArrayData] | None,
                     target: str | Target | None,
                     ops: Iterable[OpSpec] | None = None) -> dict[Workload, int]:
    """How many calls of the network use each task workload."""
    counts: dict[Workload, int] = {}
    for impl in tunable_calls(mod, params, as_target(target), ops):
        counts[impl.workload] = counts.get(impl.workload, 0) + 1
    return counts
