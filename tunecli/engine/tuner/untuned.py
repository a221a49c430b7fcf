"""The config an untuned build runs for a task, as a config of its space: what tuning measures first.

A build without a log (``relay.build`` outside any dispatch context, ``apply``'s untuned
build) gives each workload what ``ApplyHistoryBest()`` answers without records of its own: the
record of the target's pre-tuned package (``log.tophub``), else the nearest package record's
config (``log.nearest_record``), else the template's fallback config (``FallbackConfigEntity``:
first entities, refined by the template's own fallback rules).  ``tune`` measures that config
as a task's first trial, marked ``"untuned"`` in the log when its knobs are the untuned build's
(``record.UNTUNED_SOURCES``), so the log always holds it: ``apply_history_best`` answers with it
unless another record of the task is faster by more than ``layout_choice.MARGIN`` (timing noise
and costs a kernel's own timing does not see), and a short tune does not make a network slower
than not tuning at all.

A fallback config is no index of the space (its index is -1, and a fallback split may give
factors the space's filter leaves out); a package record's index was taken in the space of
whoever tuned it.  Both are mapped by their entities: the index whose knobs equal the untuned
config's, knob by knob (a split compared by its inner factors: the outer one is what remains);
when no index equals it, the valid index nearest to it (the sum over knobs of
``nearest_record.entity_distance``).  ``UntunedConfig.exact`` says which it was.

A network's untuned build also chooses each operator's implementation (``select_implementation``
without records: the package's fastest, else the highest ``plevel``, e.g. a convolution's
Winograd kernel), which may be a template the job does not tune beside one it does;
``untuned_implementations`` names those tasks, and ``tune`` measures their untuned configs too,
so the tuned build compares its tuned kernels with what the untuned build runs instead of
dropping it for any record.

A record is one measurement, taken in one moment: on a busy machine a parallel kernel timed while
another process holds a core runs several times slower than the same kernel timed in a quiet
moment, so a config measured once in a quiet moment can beat the untuned config, measured once
in a busy one, by far more than their kernels differ.  ``rematch_untuned`` measures the two again
in turns (untuned, challenger, challenger, untuned, ...), so that each has had the same moments
before the faster one is trusted.
"""

from __future__ import annotations

import logging
import math
import time
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np

from tunecli.engine.graph.extract import operator_tasks, tunable_operators
from tunecli.engine.graph.graph_expr import ArrayData
from tunecli.engine.graph.ir_module import IRModule
from tunecli.engine.graph.op_registry import OPS
from tunecli.engine.graph.op_strategy import select_implementation
from tunecli.engine.log.history_best import ApplyHistoryBest
from tunecli.engine.log.layout_choice import MARGIN, is_untuned
from tunecli.engine.log.nearest_record import entity_distance
from tunecli.engine.log.task_history import Record, TaskHistory, task_history
from tunecli.engine.log.task_records import lowest_per_config, records_of
from tunecli.engine.log.untuned_mark import stale_mark
from tunecli.engine.measure.result import MeasureInput
from tunecli.engine.target import Target
from tunecli.engine.task.config_source import DEFAULT, config_source
from tunecli.engine.task.fallback_config import FallbackConfigEntity
from tunecli.engine.task.scope import GLOBAL_SCOPE, fallback_warnings_silenced
from tunecli.engine.task.space import ConfigEntity, ConfigSpace, Entity
from tunecli.engine.task.task import Task
from tunecli.engine.tuner.remeasure import SETTLE_SECONDS, built_measurer
from tunecli.engine.tuner.tuner import MeasureSetting, make_measure_batch
from tunecli.errors import TuneError

logger = logging.getLogger("autotvm")

#: Spaces up to this many indices are searched whole for the nearest valid index.
_SEARCHED_RANGE = 1 << 22
#: Most turns of ``rematch_untuned`` (each measures the untuned config and its challenger once).
REMATCH_TURNS = 3


@dataclass(frozen=True)
class UntunedConfig:
    """The config of a task's space that stands for what its untuned build runs.

    Attributes
    ----------
    config : ConfigEntity
        A valid config of the task's space (``config.index``).
    source : {"package", "nearest", "default"}
        Where the untuned build takes it from (``ConfigSource.kind``): a pre-tuned package's
        record of the workload, the nearest package record's config, the template's fallback.
    exact : bool
        Whether its knobs equal the untuned build's (False: the nearest valid index).
    """

    config: ConfigEntity
    source: str
    exact: bool


def untuned_config(task: Task) -> UntunedConfig | None:
    """The config an untuned build of ``task``'s workload runs, as an index of its space.

    Parameters
    ----------
    task : Task

    Returns
    -------
    UntunedConfig or None
        None when the template cannot be run with its fallback config or the space has no valid
        index near it (nothing to measure then).
    """
    space = task.config_space
    if space is None or task.target is None:
        return None
    untuned = _answered(task)
    source = config_source(untuned).kind if untuned is not None else DEFAULT.kind
    if untuned is None:
        untuned = FallbackConfigEntity()
        try:
            task.instantiate(untuned)
        except (TuneError, ValueError, TypeError, IndexError, KeyError) as err:
            logger.debug("the fallback config of %s does not instantiate: %s", task.name, err)
            return None
    found = nearest_index(space, _entities(untuned))
    if found is None:
        return None
    index, exact = found
    return UntunedConfig(space.get(index), source, exact)


def measure_untuned(task: Task, known: TaskHistory, measure_option: MeasureSetting,
                    callbacks: Sequence[Callable[..., None]] = ()) -> list[Record]:
    """Measure the task's untuned config (``untuned_config``) unless ``known`` holds it (``_held``).

    Parameters
    ----------
    task : Task
    known : TaskHistory
        The task's records so far (its log).
    measure_option : dict or callable
        As ``Tuner.tune`` takes it.
    callbacks : sequence
        Streaming callbacks (``log_to_file``): each gets ``on_result(None, inp, res)``.

    Returns
    -------
    list of (MeasureInput, MeasureResult)
        The record measured (none when the log holds the config or the task has none).
    """
    found = untuned_config(task)
    if found is None or _held(found, known):
        return []
    if found.exact:  # the log line says so (``record.UNTUNED_SOURCES``): near-ties keep it
        found.config.untuned = found.source
    inp = MeasureInput(task.target, task, found.config)
    old, GLOBAL_SCOPE.in_tuning = GLOBAL_SCOPE.in_tuning, True
    try:
        (res,) = make_measure_batch(task, measure_option)([inp])
    finally:
        GLOBAL_SCOPE.in_tuning = old
    logger.debug("%s: the untuned build's %s config (index %d) measured first", task.name, found.source,
                 found.config.index)
    for callback in callbacks:
        callback.on_result(None, inp, res)
    return [(inp, res)]


def _held(found: UntunedConfig, known: TaskHistory) -> bool:
    """Whether ``known`` holds the untuned config as the ranking needs it: measured, and marked where
    the log marks another config untuned (a mark gone stale: the packages or fallback rules changed
    since; today's config, once measured as an ordinary trial, is measured again with its mark)."""
    index = int(found.config.index)
    marked = {int(inp.config.index) for inp, _ in known.records
              if is_untuned(inp.config) or stale_mark(inp.config) is not None}
    return index in known.configs and (not found.exact or not marked or index in marked)


def _answered(task: Task) -> ConfigEntity | None:
    """The untuned build's config of the task's workload from the packages (None: it falls back)."""
    with fallback_warnings_silenced(), task.target:  # no fallback warning for asking
        config = ApplyHistoryBest().query(task.target, task.workload)
    return None if getattr(config, "is_fallback", False) or not isinstance(config, ConfigEntity) else config


def _entities(config: ConfigEntity) -> dict[str, Entity]:
    return {name: config[name] for name in config}


def nearest_index(space: ConfigSpace, entities: dict[str, Entity]) -> tuple[int, bool] | None:
    """The valid index of ``space`` whose knobs equal ``entities`` (name -> entity), else the nearest.

    Parameters
    ----------
    space : ConfigSpace
    entities : dict of str to entity
        One entity per knob of the space.

    Returns
    -------
    (int, bool) or None
        The index and whether its knobs equal ``entities``; None when the knobs are not the
        space's or no valid index is found.
    """
    names = list(space.space_map)
    if sorted(names) != sorted(entities):
        return None
    costs = [np.array([entity_distance(e, entities[name]) for e in space.space_map[name].entities])
             for name in names]
    closest = [int(np.argmin(c)) for c in costs]
    index = space.knob2point(closest)
    if space.is_index_valid(index):
        return index, all(float(c[k]) == 0.0 for c, k in zip(costs, closest, strict=True))
    if space.range_length > _SEARCHED_RANGE:
        return None
    total = np.zeros(space.range_length)
    stride = 1
    points = np.arange(space.range_length)
    for c in costs:
        total += c[(points // stride) % len(c)]
        stride *= len(c)
    total[~np.array([space.is_index_valid(i) for i in range(space.range_length)])] = np.inf
    best = int(np.argmin(total))
    return (best, bool(total[best] == 0.0)) if math.isfinite(total[best]) else None


def with_records(history: TaskHistory, records: Sequence[Record]) -> TaskHistory:
    """``history`` with ``records`` (of its task, measured after it) appended."""
    seen = set(history.configs)
    best, since_best = history.best, history.since_best
    for inp, res in records:
        better = res.ok and (best is None or res.mean_cost < best[1].mean_cost)
        if int(inp.config.index) not in seen:
            seen.add(int(inp.config.index))
            since_best = 0 if better else since_best + 1
        if better:
            best = (inp, res)
    return replace(history, records=history.records + tuple(records), trials=len(seen), best=best,
                   since_best=since_best)


def untuned_implementations(mod: IRModule, params: Mapping[str, ArrayData], target: Target,
                            tuned: Collection[tuple]) -> list[Task]:
    """The tasks of the implementations an untuned build runs in the network's operators that
    the job tunes, where that implementation is not one the job tunes (a convolution's Winograd
    kernel beside its tuned direct task); in the network's order.

    Parameters
    ----------
    mod : IRModule
    params : dict of str to array
    target : Target
    tuned : collection of tuple
        The workloads the job tunes.

    Returns
    -------
    list of Task
    """
    every = [op.name for op in OPS if op.strategy_op is not None]
    tasks: dict[tuple, Task] = {}
    with fallback_warnings_silenced():
        for op in tunable_operators(mod, params, target, every):
            if not set(op.workloads) & set(tuned):
                continue  # no record of the job's answers it: both builds run the same kernel
            with target, ApplyHistoryBest():  # no records of its own: what an untuned build answers
                workload = select_implementation(op.implementations, target)[0].workload
            if workload in tuned:
                continue
            try:
                tasks.setdefault(workload, operator_tasks([op], target)[workload])
            except TuneError as err:  # a template that rejects the call: the build cannot run it either
                logger.debug("untuned implementation %s: %s", workload[0], err)
    return list(tasks.values())


def measure_untuned_implementations(tasks: Sequence[Task], logged: Sequence[Record],
                                    measure_option: Callable[[], MeasureSetting],
                                    callbacks: Sequence[Callable[..., None]] = (),
                                    on_first: Callable[[], None] | None = None) -> list[Record]:
    """Measure the untuned config of each of ``tasks`` (``untuned_implementations`` not tuned by
    the job) whose config ``logged`` does not hold; ``measure_option()`` is called (and
    ``on_first()``) only if one is.

    Returns
    -------
    list of (MeasureInput, MeasureResult)
        The records measured.
    """
    records: list[Record] = []
    option = None
    for task in tasks:
        known = task_history(task, logged)
        found = untuned_config(task)
        if found is None or _held(found, known):
            continue
        if option is None:
            option = measure_option()
            if on_first is not None:
                on_first()
        records += measure_untuned(task, known, option, callbacks)
    return records


def rematch_inputs(task: Task, records: Iterable[Record]) -> list[MeasureInput]:
    """``[untuned, challenger]`` when the task's fastest config beats its untuned config by more
    than ``layout_choice.MARGIN`` (each config by its lowest-cost valid record) and the two have
    not both been measured again yet (two records or more each); else empty.

    Parameters
    ----------
    task : Task
    records : iterable of (MeasureInput, MeasureResult)
        A log's records; only those of ``task`` count (``log.task_records.records_of``).

    Returns
    -------
    list of MeasureInput
        Inputs of ``task``: its untuned config (marked as ``measure_untuned`` marks it) and the
        challenger; empty when nothing is due.
    """
    found = untuned_config(task)
    if found is None:
        return []
    mine = records_of(records, task)
    lowest = {int(inp.config.index): res.mean_cost for inp, res in lowest_per_config(mine) if res.ok}
    untuned = int(found.config.index)
    others = [index for index in lowest if index != untuned]
    if untuned not in lowest or not others:
        return []
    challenger = min(others, key=lambda index: (lowest[index], index))
    counts = Counter(int(inp.config.index) for inp, _ in mine)
    if not _beats(lowest[challenger], lowest[untuned]) or min(counts[untuned], counts[challenger]) >= 2:
        return []
    if found.exact:
        found.config.untuned = found.source
    return [MeasureInput(task.target, task, found.config),
            MeasureInput(task.target, task, task.config_space.get(challenger))]


def rematch_untuned(task: Task, records: Iterable[Record], measure_option: MeasureSetting,
                    callbacks: Sequence[Callable[..., None]] = (), turns: int = REMATCH_TURNS,
                    settle: float = SETTLE_SECONDS) -> list[Record]:
    """Measure the untuned config and the config that beats it (``rematch_inputs``) again, in turns,
    until the challenger no longer beats it by the margin or ``turns`` turns are done.

    Each turn measures both once, back to back, in the order opposite to the turn before (the
    untuned config first in the first turn), after ``settle`` seconds of rest.

    Parameters
    ----------
    task : Task
    records : iterable of (MeasureInput, MeasureResult)
        The records to compare (e.g. the task's log).
    measure_option : dict or callable
        From ``measure_option(builder, runner)``, or a ``measure_batch`` callable.
    callbacks : sequence of callable
        Each called as ``cb(None, [inp], [res])`` after each measurement (``log_to_file(path)``
        appends the record).
    turns : int
        The most turns.
    settle : float
        Seconds to wait before each turn.

    Returns
    -------
    list of (MeasureInput, MeasureResult)
        The new records, in the order measured; empty when nothing was due.
    """
    records = list(records)
    inputs = rematch_inputs(task, records)
    if not inputs:
        return []
    lowest = [min((res.mean_cost for inp, res in records_of(records, task)
                   if res.ok and int(inp.config.index) == int(wanted.config.index)), default=math.inf)
              for wanted in inputs]
    measure = built_measurer(task, inputs, measure_option)
    out: list[Record] = []
    for turn in range(max(0, int(turns))):
        time.sleep(settle)
        for which in (0, 1) if turn % 2 == 0 else (1, 0):
            res = measure(which)
            out.append((inputs[which], res))
            if res.ok:
                lowest[which] = min(lowest[which], res.mean_cost)
            for callback in callbacks:
                callback(None, [inputs[which]], [res])
        if not _beats(lowest[1], lowest[0]):
            break
    return out


def _beats(cost: float, untuned_cost: float) -> bool:
    """Whether ``cost`` beats the untuned config's by more than ``layout_choice.MARGIN``."""
    return cost < untuned_cost * (1 - MARGIN)
