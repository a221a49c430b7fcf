"""ApplyHistoryBest: a dispatch context answering with the best records of tuning logs.

Records with an error are ignored.  The best record (smallest mean cost; ties keep the first seen;
the record of the untuned config, which ``tune`` measures first, unless another is faster by more
than ``layout_choice.MARGIN``; among records in different layouts, one in the template's default
layouts unless another is faster by that margin: ``layout_choice``) is kept per task (target and
workload, ``task_records.record_key``), per (target key, workload) for every key of the record's
target, per (model, workload) when the target names a model, and per (CPU, workload) when an
``llvm`` target names its CPU (``-mcpu``).  A query looks up records of exactly the queried target
first (the rule of ``task_records``: a config measured on this target), then, as TVM does, the
target's model, then records of the CPU the query compiles for (its ``-mcpu``, or this machine's CPU
for a host target: a log or package holding several machines' records answers with this machine's),
then each of the target's keys in order (a config measured on a similar target); configs set with
``update`` win over records.  A query that no record of the workload answers, here, in the target's
packages or in an enclosing ``ApplyHistoryBest``, gets the config of the nearest record of its
template and CPU among all of theirs (``nearest_record``) before the root context's fallback config.
Every answer carries its ``ConfigSource`` (``config.source``: log, package, nearest; a fallback
config is the default).  A workload of a template sharing another's knobs is answered by a logged
record of that twin workload after its own records (``nearest_record.served_by_twin``).  A log's
``"untuned"`` mark that today's untuned build (``untuned_answer``) no longer runs is not honoured: its
record ranks as an ordinary one (``untuned_mark``; ``stale_marks``, ``why``).
``pick_best`` writes those best records of a log to another log, so the picked log answers
every query as the whole log does.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable, Sequence
from typing import IO

from tunecli.engine.log import tophub
from tunecli.engine.log.layout_choice import ChosenTable, explain, layout_key
from tunecli.engine.log.log_files import write_log
from tunecli.engine.log.nearest_record import Reference, nearest_config, served_by_twin, twin_workload
from tunecli.engine.log.record import (
    Record,
    encode,
    load_from_file,
    measure_str_key,
)
from tunecli.engine.log.record_sources import RecordSources, iter_sourced
from tunecli.engine.log.task_records import record_key
from tunecli.engine.log.untuned_mark import mark_is_current, stale_mark, stale_text
from tunecli.engine.measure.result import MeasureInput, MeasureResult
from tunecli.engine.target import Target, as_target
from tunecli.engine.task.config_source import ConfigSource
from tunecli.engine.task.dispatcher import DispatchContext, FallbackContext
from tunecli.engine.task.scope import fallback_warnings_silenced
from tunecli.engine.task.space import ConfigSpace
from tunecli.errors import TuneError

logger = logging.getLogger("autotvm")

#: ``TUNECLI_NO_NEAREST=1``: workloads without a record get the fallback config, as before nearest records.
NO_NEAREST_ENV = "TUNECLI_NO_NEAREST"
class ApplyHistoryBest(DispatchContext):
    """Answer queries with the best measured config of tuning logs.

    Parameters
    ----------
    records : path, file object, iterable of (MeasureInput, MeasureResult) or of ``LogRecord``, or
        nested iterables
        Sources to load; more can be added with ``load``.
    pretuned : bool
        Answer what the records do not with the target's pre-tuned packages (``tophub``).
    nearest : bool, optional
        Answer a workload without any record with the nearest record's config (``nearest_record``);
        by default unless the environment sets ``TUNECLI_NO_NEAREST=1``.
    """

    def __init__(self, records: RecordSources | None = None, pretuned: bool = True,
                 nearest: bool | None = None) -> None:
        super().__init__()
        self.pretuned = pretuned
        self.nearest = os.environ.get(NO_NEAREST_ENV) != "1" if nearest is None else nearest
        self._origin_kind = "log"
        self._references: list[Reference] | None = None
        self._nearest_memo: dict[tuple, ConfigSpace | None] = {}
        # a key with records in several layouts is chosen when first read (``layout_choice.ChosenTable``)
        self.best_by_target: dict[tuple, Record] = ChosenTable()
        self.best_by_targetkey: dict[tuple, Record] = ChosenTable()
        self.best_by_model: dict[tuple, Record] = ChosenTable()
        self.best_by_cpu: dict[tuple, Record] = ChosenTable()
        self._best_user_defined: dict[tuple, ConfigSpace] = {}
        # per (table name, key): the best record of each (target, layout, untuned) seen, for ``layout_choice``
        self._layout_groups: dict[tuple[str, tuple], dict[tuple, Record]] = {}
        # per task (``record_key``): the untuned config's index and source (``layout_choice.is_untuned``)
        self._untuned: dict[tuple, tuple[int, str]] = {}
        #: per task (``record_key``): a record whose untuned mark is stale (``untuned_mark``)
        self.stale_marks: dict[tuple, MeasureInput] = {}
        if records:
            self.load(records)

    def load(self, records: RecordSources) -> None:
        """Add the records of ``records`` (same forms as the constructor).

        Parameters
        ----------
        records : path, file object, iterable of (MeasureInput, MeasureResult), or nested iterables
        """
        self._references = None
        self._nearest_memo.clear()
        unsettled: dict[tuple[str, tuple], None] = {}  # ordered: the order of deferral is the order seen
        for inp, res, path in iter_sourced(records):
            if not res.ok:
                continue
            workload = inp.task.workload
            cost = res.mean_cost
            if inp.config.cost is None:  # a record not read from a log: its config answers with its cost
                inp.config.cost = float(cost)
            if getattr(inp.config, "source", None) is None:
                detail = os.path.basename(path) if path and self._origin_kind == "package" else path or ""
                inp.config.source = ConfigSource(self._origin_kind, detail)
            group = (str(inp.target), layout_key(inp.config), self._mark_untuned(inp))
            self._keep("best_by_target", record_key(inp), group, inp, res, cost, unsettled)
            for key in inp.target.keys:
                self._keep("best_by_targetkey", (key, workload), group, inp, res, cost, unsettled)
            if inp.target.model != "unknown":
                self._keep("best_by_model", (inp.target.model, workload), group, inp, res, cost, unsettled)
            if inp.target.kind == "llvm" and inp.target.mcpu:
                self._keep("best_by_cpu", (inp.target.mcpu, workload), group, inp, res, cost, unsettled)
        for name, key in unsettled:
            getattr(self, name).defer(key, self._layout_groups[name, key].values)
        logger.debug("Finished loading history best: %d target keys, %d models",
                     len(self.best_by_targetkey), len(self.best_by_model))

    def _mark_untuned(self, inp: MeasureInput) -> bool:
        """Whether ``inp``'s config is its task's untuned config: a record marked so whose mark is
        current (``untuned_mark``; a package's marks are not checked), or another record of a config
        seen marked before (a re-measurement), which is marked too."""
        task = record_key(inp)
        untuned = getattr(inp.config, "untuned", None)
        if untuned is not None and (self._origin_kind == "package" or mark_is_current(inp, untuned_answer)):
            self._untuned.setdefault(task, (int(inp.config.index), untuned))
            return True
        if stale_mark(inp.config) is not None:
            self.stale_marks.setdefault(task, inp)
            return False
        seen = self._untuned.get(task)
        if seen is not None and seen[0] == int(inp.config.index):
            inp.config.untuned = seen[1]
            return True
        return False

    def _keep(self, name: str, key: tuple, group: tuple, inp: MeasureInput, res: MeasureResult, cost: float,
              unsettled: dict[tuple[str, tuple], None]) -> None:
        """Keep (inp, res) as the best of its (target, layout, untuned) group under ``key`` of table
        ``name``; a key with records in several layouts, or of the untuned config and others, is chosen
        among them when first read (``unsettled``, deferred at the end of ``load``)."""
        groups = self._layout_groups.setdefault((name, key), {})
        _keep_best(groups, group, inp, res, cost)
        if len({(layout, untuned) for _, layout, untuned in groups}) == 1:
            _keep_best(getattr(self, name), key, inp, res, cost)
        else:
            unsettled[name, key] = None

    def why(self, target: Target | str, workload: tuple) -> str | None:
        """Why this context's record of ``workload`` measured on ``target`` answers it
        (``layout_choice.Choice.why``: the fastest record, or the untuned config or a default-layout
        record within the margin); None when it holds none.

        Parameters
        ----------
        target : Target or str
        workload : tuple

        Returns
        -------
        str or None
        """
        key = (as_target(target), workload)
        held = self.best_by_target.get(key)
        if held is None:
            return None
        why = self.best_by_target.why.get(key) or explain([held]).why  # type: ignore[union-attr]
        return why + (f"; {stale_text(stale)}" if (stale := self.stale_marks.get(key)) is not None else "")

    def _query_inside(self, target: Target | None, workload: tuple | None) -> ConfigSpace | None:
        if target is None:
            raise TuneError(
                "ApplyHistoryBest.query: Need a target context to find the history best. Hint: If your "
                "target is llvm, use `with tvm.target.Target('llvm'):` above the dispatcher call. "
                "So does other target. ")
        key = (target.model, workload)
        if key in self._best_user_defined:
            return self._best_user_defined[key]
        by_key_update = any((k, workload) in self._best_user_defined for k in target.keys)
        exact = self.best_by_target.get((as_target(target), workload))
        if exact is not None and not by_key_update:
            return exact[0].config
        if key in self.best_by_model:
            return self.best_by_model[key][0].config
        same_cpu = self.best_by_cpu.get((target.llvm_cpu, workload)) if target.kind == "llvm" else None
        if same_cpu is not None and not by_key_update:
            return same_cpu[0].config
        for k in target.keys:
            key = (k, workload)
            if key in self._best_user_defined:
                return self._best_user_defined[key]
            if key in self.best_by_targetkey:
                return self.best_by_targetkey[key][0].config
        if self.pretuned and workload is not None:
            for package in pretuned_packages(target):
                config = package._query_inside(target, workload)
                if config is not None:
                    return config
        return None

    def query(self, target: Target | None, workload: tuple | None) -> ConfigSpace:
        """The config of ``workload`` on ``target``: a record's (here, then in the enclosing
        contexts), else the nearest record's, else the fallback config (see the module docstring).

        Parameters
        ----------
        target : Target or None
        workload : tuple or None

        Returns
        -------
        ConfigSpace
        """
        twin = twin_workload(workload)
        for wanted in (workload, twin) if twin else (workload,):
            outer: DispatchContext | None = self
            while isinstance(outer, ApplyHistoryBest):  # their records answer before any nearest one
                config = outer._query_inside(target, wanted)
                served = config if wanted is workload or config is None else served_by_twin(config, twin)
                if served is not None:
                    return served
                outer = outer._old_ctx
        if isinstance(outer, FallbackContext) and workload is not None:
            chosen = self._nearest(as_target(target), workload)
            if chosen is not None:
                return chosen
        return outer.query(target, workload)

    def _nearest(self, target: Target, workload: tuple) -> ConfigSpace | None:
        """The nearest record's config of ``workload`` among the records of this context, the
        enclosing ``ApplyHistoryBest`` contexts and their packages (memoized until ``load``)."""
        key = (str(target), workload)
        if key not in self._nearest_memo:
            references: list[Reference] = []
            contexts: list[ApplyHistoryBest] = []
            ctx: DispatchContext | None = self
            while isinstance(ctx, ApplyHistoryBest):
                if ctx.nearest:
                    contexts.append(ctx)
                    if ctx.pretuned:
                        contexts.extend(p for p in pretuned_packages(target) if p not in contexts)
                ctx = ctx._old_ctx
            for context in contexts:
                references.extend(context.references())
            self._nearest_memo[key] = nearest_config(target, workload, references) if references else None
        return self._nearest_memo[key]

    def references(self) -> list[Reference]:
        """This context's best record per (target, workload), as ``nearest_record.Reference``."""
        if self._references is None:
            self._references = [
                Reference(inp.target, inp.task.workload, inp.config, float(res.mean_cost),
                          inp.config.source if isinstance(getattr(inp.config, "source", None), ConfigSource)
                          else ConfigSource(self._origin_kind))
                for inp, res in self.best_by_target.values()]
        return self._references

    def update(self, target: Target, workload: tuple, cfg: ConfigSpace) -> None:
        """Make ``cfg`` the best config for ``workload`` under the target's model and keys."""
        self._nearest_memo.clear()
        cfg.cost = 0
        self._best_user_defined[(target.model, workload)] = cfg
        for k in target.keys:
            self._best_user_defined[(k, workload)] = cfg


apply_history_best = ApplyHistoryBest


def untuned_answer(target: Target, workload: tuple) -> ConfigSpace:
    """The config an untuned build runs for ``workload`` (what ``ApplyHistoryBest()`` answers without
    records of its own: a package's record, the nearest package record's config, the fallback)."""
    plain = ApplyHistoryBest()
    context = DispatchContext.current
    while not isinstance(context, FallbackContext):
        context = context._old_ctx  # type: ignore[union-attr]
    plain._old_ctx = context
    with fallback_warnings_silenced():
        return plain.query(target, workload)


# One loaded context per package file (and its modification time).
_PACKAGES: dict[tuple[str, int], ApplyHistoryBest] = {}


def pretuned_packages(target: Target | str) -> list[ApplyHistoryBest]:
    """The records of each pre-tuned package file of ``target`` (``tophub.package_files``), in
    search order (a user's package before the shipped one: costs measured on different machines
    are not compared), each file loaded once.

    Parameters
    ----------
    target : str or Target

    Returns
    -------
    list of ApplyHistoryBest
    """
    packages = []
    for path in tophub.package_files(target):
        key = (str(path), path.stat().st_mtime_ns)
        if key not in _PACKAGES:
            package = ApplyHistoryBest(pretuned=False)
            package._origin_kind = "package"
            package.load(str(path))
            _PACKAGES[key] = package
        packages.append(_PACKAGES[key])
    return packages


def package_config(target: Target | str, workload: tuple) -> ConfigSpace | None:
    """The config the target's pre-tuned packages answer ``workload`` with (a measured one, as an
    untuned build takes it), else None."""
    target = as_target(target)
    for package in pretuned_packages(target):
        config = package._query_inside(target, workload)
        if config is not None:
            return config
    return None


def tophub_context(target: Target | str | Sequence[Target | str],
                   extra_files: Iterable[str | os.PathLike[str]] | None = None) -> ApplyHistoryBest:
    """TVM's ``autotvm.tophub.context``: a dispatch context of the pre-tuned packages of the target(s).

    Parameters
    ----------
    target : str, Target, or a list of them
    extra_files : iterable of paths, optional
        More logs to load (TVM's ``extra_files``).

    Returns
    -------
    ApplyHistoryBest
        Answers from those records only; use it as ``with tophub_context(target): ...``.
    """
    targets = target if isinstance(target, (list, tuple)) else [target]
    context = ApplyHistoryBest(pretuned=False)
    context._origin_kind = "package"
    for t in targets:
        context.load([str(f) for f in tophub.package_files(as_target(t))])
    context._origin_kind = "log"
    if extra_files:
        context.load([os.fspath(f) for f in extra_files])
    return context


def _keep_best(table: dict[tuple, Record], key: tuple, inp: MeasureInput, res: MeasureResult,
               cost: float) -> None:
    """Store (inp, res) under key unless a record at least as fast is there (ties keep the first)."""
    old = table.get(key)
    if old is None or cost < old[1].mean_cost:
        table[key] = (inp, res)


def pick_best(in_file: str | os.PathLike, out_file: str | os.PathLike | IO[str]) -> int:
    """Write the best record per (target, workload), (target key, workload), (model, workload) and
    (CPU, workload).

    Records of ``out_file``, when it is an existing path, compete too.  Lines are written in
    input order, each once; a path is replaced whole (``log_files.write_log``).

    Parameters
    ----------
    in_file : str or path
    out_file : str, path or writable file object

    Returns
    -------
    int
        Number of records written.
    """
    sources: list[str | os.PathLike] = [in_file]
    if isinstance(out_file, (str, os.PathLike)) and os.path.isfile(out_file):
        sources.append(out_file)
    records = [pair for src in sources for pair in load_from_file(src)]
    context = ApplyHistoryBest(records)
    tables = (context.best_by_target, context.best_by_model, context.best_by_cpu, context.best_by_targetkey)
    best = {measure_str_key(inp) for table in tables for inp, _ in table.values()}
    lines = []
    for inp, res in records:
        key = measure_str_key(inp)
        if key in best:
            lines.append(encode(inp, res) + "\n")
            best.remove(key)
    if hasattr(out_file, "write"):
        out_file.writelines(lines)
    else:
        write_log(out_file, lines)
    return len(lines)
