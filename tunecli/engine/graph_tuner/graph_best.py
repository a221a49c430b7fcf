"""``ApplyGraphBest``: a dispatch context answering with the graph tuner's choices (TVM's
``autotvm.apply_graph_best``).

The records are the graph tuner's output (``write_opt_sch2record_file``): one per convolution,
in graph order.  Convolutions with the same workload may have been given different configs
(their neighbours' layouts differ), so, as in TVM, the records of a workload answer its
queries in order — the k-th query of a workload gets its k-th record — and the last record
answers any further query of it.  A build therefore asks once per convolution, in graph order.
A workload without records is passed to the enclosing context (``ApplyHistoryBest``, the
pre-tuned packages, or the fallback config).
"""

from __future__ import annotations

import os
from typing import Any

from tunecli.engine.log.record import load_from_file
from tunecli.engine.task.dispatcher import DispatchContext
from tunecli.engine.task.space import ConfigSpace


class ApplyGraphBest(DispatchContext):
    """Answer each workload's queries with the graph tuner's records of it, in order.

    Parameters
    ----------
    records : str, path, or iterable of (MeasureInput, MeasureResult)
        The graph tuner's records (a log written by ``write_opt_sch2record_file``).
    """

    def __init__(self, records: Any):
        super().__init__()
        if isinstance(records, (str, os.PathLike)):
            records = load_from_file(records)
        self.records = list(records)
        self._queue: dict[tuple, list[ConfigSpace]] = {}
        for inp, _ in self.records:
            self._queue.setdefault(inp.task.workload, []).append(inp.config)
        self._answered: dict[tuple, int] = {}
        self._updated: dict[tuple, ConfigSpace] = {}

    def _query_inside(self, target: Any, workload: tuple | None) -> ConfigSpace | None:
        if (str(target), workload) in self._updated:
            return self._updated[str(target), workload]
        configs = self._queue.get(workload) if workload is not None else None
        if not configs:
            return None
        k = self._answered.get(workload, 0)
        self._answered[workload] = k + 1
        return configs[min(k, len(configs) - 1)]

    def update(self, target: Any, workload: tuple, cfg: ConfigSpace) -> None:
        """Answer every later query of (target, workload) with ``cfg``."""
        self._updated[str(target), workload] = cfg


apply_graph_best = ApplyGraphBest
