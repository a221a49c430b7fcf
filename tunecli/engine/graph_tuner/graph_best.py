"""``ApplyGraphBest``: a dispatch context answering with the graph tuner's choices (TVM's
``autotvm.apply_graph_best``).

The records are the graph tuner's output (``write_opt_sch2record_file``): one per convolution,
in graph order.  Convolutions with the same workload may have been given different configs
(their neighbours' layouts differ), so, as in TVM, the records of a workload answer its
queries in order — the k-th query of a workload gets its k-th record — and the last record
answers any further query of it.  A build therefore asks once per convolution, in graph order.
A workload without records is passed to the enclosing context (``ApplyHistoryBest``, the
pre-tuned packages, or the fallback config).

A convolution with several implementations (``conv2d_NCHWc.x86`` and
``conv2d_NCHWc_winograd.x86``: the same arguments, another template name) is one node of the
graph tuner: its records are queued by the workload's arguments, and ``choose`` answers the
call with its record, whose template names the implementation.
"""

from __future__ import annotations

import os
from collections.abc import Iterable

from tunecli.engine.log.record import Record, load_from_file
from tunecli.engine.target import Target
from tunecli.engine.task.dispatcher import DispatchContext
from tunecli.engine.task.space import ConfigSpace
from tunecli.engine.task.workload_args import Workload, WorkloadArg


class ApplyGraphBest(DispatchContext):
    """Answer each workload's queries with the graph tuner's records of it, in order.

    Parameters
    ----------
    records : str, path, or iterable of (MeasureInput, MeasureResult)
        The graph tuner's records (a log written by ``write_opt_sch2record_file``).
    """

    def __init__(self, records: str | os.PathLike[str] | Iterable[Record]) -> None:
        super().__init__()
        if isinstance(records, (str, os.PathLike)):
            records = load_from_file(records)
        self.records = list(records)
        # by the workload's arguments (template names differ between implementations of a node)
        self._queue: dict[tuple[WorkloadArg, ...], list[tuple[Workload, ConfigSpace]]] = {}
        for inp, _ in self.records:
            workload = inp.task.workload
            self._queue.setdefault(tuple(workload[1:]), []).append((workload, inp.config))
        self._answered: dict[tuple[WorkloadArg, ...], int] = {}
        self._updated: dict[tuple[str, Workload], ConfigSpace] = {}

    def _next(self, workload: Workload) -> tuple[Workload, ConfigSpace] | None:
        entries = self._queue.get(tuple(workload[1:]))
        if not entries:
            return None
        k = self._answered.get(tuple(workload[1:]), 0)
        self._answered[tuple(workload[1:])] = k + 1
        return entries[min(k, len(entries) - 1)]

    def _query_inside(self, target: Target | str | None, workload: Workload | None) -> ConfigSpace | None:
        if (str(target), workload) in self._updated:
            return self._updated[str(target), workload]
        entry = self._next(workload) if workload is not None else None
        return entry[1] if entry is not None and entry[0] == workload else None

    def choose(self, target: Target | str | None,
               workloads: list[Workload]) -> tuple[Workload, ConfigSpace] | None:
        """The call's record, when its template is one of ``workloads`` (see the module docstring)."""
        for workload in workloads:
            if (str(target), workload) in self._updated:
                return workload, self._updated[str(target), workload]
        entries = self._queue.get(tuple(workloads[0][1:]))
        if not entries or not any(entry[0] in workloads for entry in entries):
            return super().choose(target, workloads)
        entry = self._next(workloads[0])
        return entry if entry is not None and entry[0] in workloads else super().choose(target, workloads)

    def update(self, target: Target | str | None, workload: Workload, cfg: ConfigSpace) -> None:
        """Answer every later query of (target, workload) with ``cfg``."""
        self._updated[str(target), workload] = cfg


apply_graph_best = ApplyGraphBest
