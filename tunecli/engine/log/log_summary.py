"""``inspect_log``: what a tuning log holds, as data the command layer draws.

Its records and their errors by kind, and per workload its trials, their errors by kind and the
best-so-far curve over the trials (GFLOPS where the FLOP count is known, milliseconds otherwise).
A trial is a config, however many records it has (``tuner.remeasure`` measures the best configs
again): its lowest-cost record (``log.task_records.lowest_per_config``), in the order configs
first appear.  Records faster than any machine are skipped (``log.plausibility``).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from tunecli.engine.log.log_files import check_log_file
from tunecli.engine.log.plausibility import plausible, workload_flop
from tunecli.engine.log.record import JsonValue, Record, read_log
from tunecli.engine.log.task_records import RecordKey, lowest_per_config, record_key
from tunecli.engine.measure.result import MeasureErrorNo
from tunecli.engine.task.text import workload_text


@dataclass
class WorkloadCurve:
    """The trials of one (target, workload): one per config, in the order configs first appear.

    ``costs`` holds each config's lowest valid cost (None for a config with no valid record);
    ``errors`` counts by kind the configs with no valid record.
    """

    target: str
    label: str
    flop: float | None
    errors: Counter = field(default_factory=Counter)
    costs: list[float | None] = field(default_factory=list)

    @property
    def unit(self) -> str:
        """``"GFLOPS"`` when the FLOP count is known, else ``"ms"``."""
        return "GFLOPS" if self.flop else "ms"

    def best_so_far(self) -> list[float | None]:
        """Best value after each trial (GFLOPS: higher is better; ms: lower is better)."""
        out: list[float | None] = []
        best: float | None = None
        for cost in self.costs:
            if cost is not None and cost > 0:
                if best is None or cost < best:
                    best = cost
            out.append(None if best is None else (self.flop / best / 1e9 if self.flop else best * 1e3))
        return out


@dataclass
class LogView:
    """What ``inspect_log`` found; ``as_dict()`` is the JSON form.

    ``records`` and ``errors`` count the log's records; each workload counts its trials (configs).
    """

    path: str
    records: int = 0
    errors: Counter = field(default_factory=Counter)
    workloads: list[WorkloadCurve] = field(default_factory=list)

    def as_dict(self) -> dict[str, JsonValue]:
        """Return a JSON-serialisable dict."""
        return {"path": self.path, "records": self.records, "errors": dict(self.errors),
                "workloads": [{"target": w.target, "workload": w.label, "trials": len(w.costs),
                               "errors": dict(w.errors), "unit": w.unit, "best": w.best_so_far()[-1]}
                              for w in self.workloads]}


def inspect_log(path: str) -> LogView:
    """Summarise a tuning log: records, errors by kind, and each workload's best-so-far curve.

    Parameters
    ----------
    path : str

    Returns
    -------
    LogView

    Raises
    ------
    RecordError
        When the log cannot be read.
    """
    check_log_file(path)
    view = LogView(path)
    groups: dict[RecordKey, list[Record]] = {}
    for record in plausible(read_log(path)):
        view.records += 1
        if not record.result.ok:
            view.errors[_error_name(record.result.error_no)] += 1
        groups.setdefault(record_key(record.inp), []).append((record.inp, record.result))
    for pairs in groups.values():
        first = pairs[0][0]
        curve = WorkloadCurve(str(first.target), workload_text(first.task.name, first.task.args),
                              workload_flop(first.task.name, first.task.args, first.target))
        for _, res in lowest_per_config(pairs):  # a trial is a config, however often it was measured
            curve.costs.append(res.mean_cost if res.ok else None)
            if not res.ok:
                curve.errors[_error_name(res.error_no)] += 1
        view.workloads.append(curve)
    return view


def _error_name(error_no: int) -> str:
    try:
        return MeasureErrorNo(int(error_no)).name
    except ValueError:
        return f"ERROR_{error_no}"
