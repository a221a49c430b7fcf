"""Which records of a tuning log belong to a task: the one rule, used wherever a log is read.

A record ``(MeasureInput, MeasureResult)`` belongs to a task when

1. **the workload is the same**: template name and serialized arguments (``task.workload``);
2. **the target is the same**: ``inp.target == task.target``, i.e. the same kind, options (in any
   order) and host.  Not TVM's ``ApplyHistoryBest`` match by target key (``cpu``) or model:
   that is a dispatch *fallback* (a log from one x86 CPU still gives another CPU a config),
   whereas a time measured for ``llvm -mcpu=znver4`` says nothing about what remains to be
   measured for ``llvm -mcpu=skylake-avx512``;
3. **the config is still the one logged**: its index decodes, in the task's config space, to
   the entities the record holds (a record of an older version of the template, whose space
   changed, describes another config under the same index).  Checked when the task has a space.

A config may have several records of its task (``tuner.remeasure`` measures the best configs
again): whoever ranks configs or counts trials takes each config once, by its lowest-cost valid
record (``lowest_per_config``), as ``ApplyHistoryBest`` does.

Resume counting (``job.tune_job``), a tuner's ``load_history`` (visited configs and training
data), ``job.best_of_logs``, ``job.inspect_job`` (grouping by ``record_key``) and the
exact-target table of ``ApplyHistoryBest`` use this rule.  Transfer learning (the XGB cost
model's ``fit_log``) deliberately reads further: every record of the same template.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable
from typing import TypeAlias

from tunecli.engine.log.record import Record
from tunecli.engine.measure.result import MeasureInput
from tunecli.engine.target import Target, as_target
from tunecli.engine.task.space import ConfigEntity, ConfigSpace
from tunecli.engine.task.task import Task
from tunecli.engine.task.workload_args import Workload

logger = logging.getLogger("autotvm")

#: What records of one task share (``record_key``): the target and the workload.
RecordKey: TypeAlias = tuple[Target | None, Workload]


def record_key(inp: MeasureInput) -> RecordKey:
    """Return ``(target, workload)``: records with equal keys are records of one task.

    Parameters
    ----------
    inp : MeasureInput

    Returns
    -------
    tuple of (Target, tuple)
        Targets compare by kind, options and host, so differently ordered options give one key.
    """
    return _target(inp.target), inp.task.workload


def _target(target: Target | str | None) -> Target | None:
    """A Target for a Target or a target string (as a user's MeasureInput may hold)."""
    return None if target is None else as_target(target)


def _normalised_entities(config: ConfigEntity) -> list[list[object]]:
    """The log form of a config's entities, with split outer extents written as -1."""
    out = []
    for name, tag, value in config.to_json_dict()["entity"]:
        value = json.loads(json.dumps(value))
        if tag == "sp":
            value = [-1] + value[1:]
        out.append([name, tag, value])
    return out


def denotes(space: ConfigSpace, config: ConfigEntity) -> bool:
    """True when ``config.index`` decodes to ``config``'s entities in ``space``.

    Parameters
    ----------
    space : ConfigSpace
    config : ConfigEntity
        A config read from a log.

    Returns
    -------
    bool
    """
    index = int(config.index)
    if not 0 <= index < space.range_length or not space.is_index_valid(index):
        return False
    return _normalised_entities(space.get(index)) == _normalised_entities(config)


def belongs_to(inp: MeasureInput, task: Task) -> bool:
    """True when the record of ``inp`` is a record of ``task`` (see the module docstring).

    Parameters
    ----------
    inp : MeasureInput
    task : Task

    Returns
    -------
    bool
    """
    if record_key(inp) != (_target(task.target), task.workload):
        return False
    space = getattr(task, "config_space", None)
    if space is None or denotes(space, inp.config):
        return True
    logger.debug("log record %d of %s does not match this config space; ignored", inp.config.index, task.name)
    return False


def records_of(records: Iterable[Record], task: Task) -> list[Record]:
    """Return the records of ``task`` among ``records``, in order.

    Parameters
    ----------
    records : iterable of (MeasureInput, MeasureResult)
    task : Task

    Returns
    -------
    list of (MeasureInput, MeasureResult)
    """
    return [(inp, res) for inp, res in records if belongs_to(inp, task)]


def lowest_per_config(records: Iterable[Record]) -> list[Record]:
    """Return one record per config: its lowest-cost valid record, else (none valid) its first.

    Parameters
    ----------
    records : iterable of (MeasureInput, MeasureResult)
        Records of one task (configs are told apart by index).

    Returns
    -------
    list of (MeasureInput, MeasureResult)
        The configs in the order of their first record; of equal costs the earlier record.
    """
    chosen: dict[int, Record] = {}
    for inp, res in records:
        index = int(inp.config.index)
        held = chosen.get(index)
        if held is None or (res.ok and (not held[1].ok or res.mean_cost < held[1].mean_cost)):
            chosen[index] = (inp, res)
    return list(chosen.values())
