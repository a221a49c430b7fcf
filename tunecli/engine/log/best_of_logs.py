"""``best_of_logs``: the best configs per workload found in one or more tuning logs.

Logs are read tolerantly (TVM's own logs included: v0.2 and v0.1 rows, comments, malformed lines
skipped with a warning naming the line), and records faster than any machine are skipped
(``log.plausibility``).  Records are grouped by task (target and workload, as
``log.task_records.record_key`` says) and ranked by mean cost, each config once (by its
lowest-cost record: a config measured again, ``tuner.remeasure``, has several); GFLOPS are
shown where the FLOP count of the workload is known (``log.plausibility.workload_flop``).  The
output log holds the kept records and, when it is not among them, the record ``apply_history_best``
answers the workload with (``log.layout_choice``: a near-tie keeps the untuned config, then the
default layouts), so it answers as the logs read do; each workload says which config that is and
why (``WorkloadBest.chosen``, ``why``), and the untuned config's entry is marked; a mark that today's
untuned build no longer runs is not honoured (``untuned_mark``: ``WorkloadBest.stale``).  It is written
whole through a temporary file, never over one of the logs read or a log a tune is writing.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from tunecli.engine.log.history_best import untuned_answer
from tunecli.engine.log.layout_choice import explain, mark_untuned
from tunecli.engine.log.log_files import check_log_file, check_output_log, write_log
from tunecli.engine.log.plausibility import plausible, workload_flop
from tunecli.engine.log.record import JsonValue, Record, encode, read_log
from tunecli.engine.log.task_records import RecordKey, lowest_per_config, record_key
from tunecli.engine.log.untuned_mark import drop_stale_marks, stale_text
from tunecli.engine.task.text import config_text, workload_text
from tunecli.engine.task.workload_args import WorkloadArg
from tunecli.errors import LogPathError


@dataclass(frozen=True)
class BestEntry:
    """One ranked record of a workload."""

    rank: int
    cost: float
    gflops: float | None
    index: int
    config: str
    timestamp: float
    #: the untuned build's config (the line ``tune`` measured first): where it takes it from
    untuned: str | None = None


@dataclass
class WorkloadBest:
    """The best records of one (target, workload)."""

    target: str
    name: str
    args: tuple[WorkloadArg, ...]
    flop: float | None
    records: int
    errors: int
    best: list[BestEntry] = field(default_factory=list)
    #: the config index ``apply_history_best`` answers with, and why (``layout_choice.Choice.why``)
    chosen: int | None = None
    why: str | None = None
    #: a record marked untuned that today's untuned build no longer runs, ranked as an ordinary record
    stale: str | None = None

    @property
    def workload(self) -> str:
        """``name(args)`` for display."""
        return workload_text(self.name, self.args)


@dataclass
class BestReport:
    """What ``best_of_logs`` found; ``as_dict()`` is what ``tunecli best --json`` prints."""

    logs: list[str]
    records: int = 0
    errors: int = 0
    workloads: list[WorkloadBest] = field(default_factory=list)
    written: str | None = None

    def as_dict(self) -> dict[str, JsonValue]:
        """Return a JSON-serialisable dict."""
        return {
            "logs": self.logs, "records": self.records, "errors": self.errors, "written": self.written,
            "workloads": [
                {"target": w.target, "workload": [w.name, *_plain(w.args)], "flop": w.flop,
                 "records": w.records, "errors": w.errors,
                 "best": [vars(e) for e in w.best], "chosen": w.chosen, "why": w.why,
                 "stale": w.stale}
                for w in self.workloads
            ],
        }


def _plain(value: object) -> object:
    if isinstance(value, (tuple, list)):
        return [_plain(v) for v in value]
    return value


def best_of_logs(paths: list[str], top: int = 1, out: str | os.PathLike | None = None) -> BestReport:
    """Rank the valid records of the logs by mean cost, per (target, workload).

    Parameters
    ----------
    paths : list of str
        Tuning logs (tunecli's or TVM's).
    top : int
        How many records to keep per workload.
    out : path, optional
        Write the kept records there (a log ``apply`` / ``apply_history_best`` can use).

    Returns
    -------
    BestReport

    Raises
    ------
    RecordError
        When a log cannot be read.
    LogInUseError
        When ``out`` is one of ``paths`` (by any name) or a tune is writing it.
    LogPathError
        When ``out`` cannot be written (the file that was there, if any, is as it was).
    """
    report = BestReport(logs=[str(p) for p in paths])
    for path in paths:
        check_log_file(path)
    if out is not None:
        check_output_log(out, paths)
    groups: dict[RecordKey, list[Record]] = {}
    for record in plausible(record for path in paths for record in read_log(path)):
        report.records += 1
        groups.setdefault(record_key(record.inp), []).append((record.inp, record.result))
    kept: list[Record] = []
    for pairs in groups.values():
        first = pairs[0][0]
        target, name, args = str(first.target), first.task.name, first.task.args
        valid = [(inp, res) for inp, res in pairs if res.ok]
        n_errors = len(pairs) - len(valid)
        report.errors += n_errors
        stale = drop_stale_marks(valid, untuned_answer)
        mark_untuned(valid)
        valid = sorted(lowest_per_config(valid), key=lambda pair: pair[1].mean_cost)
        flop = workload_flop(name, args, first.target)
        entry = WorkloadBest(target, name, args, flop, len(pairs), n_errors,
                             stale=stale_text(stale[0]) if stale else None)
        for rank, (inp, res) in enumerate(valid[:top], start=1):
            entry.best.append(BestEntry(rank, res.mean_cost, res.gflops(flop) or None, int(inp.config.index),
                                        config_text(inp.config), float(res.timestamp),
                                        getattr(inp.config, "untuned", None)))
            kept.append((inp, res))
        choice = explain(valid)
        if choice is not None:
            entry.chosen, entry.why = int(choice.record[0].config.index), choice.why
            if all(choice.record[0] is not inp for inp, _ in valid[:top]):
                kept.append(choice.record)
        report.workloads.append(entry)
    if out is not None:
        try:
            write_log(out, (encode(inp, res) + "\n" for inp, res in kept))
        except OSError as err:  # a read-only directory, a full disk
            raise LogPathError(f"{os.fspath(out)}: cannot write this log: {err.strerror or err}; "
                               "nothing was written there") from None
        report.written = str(out)
    return report

