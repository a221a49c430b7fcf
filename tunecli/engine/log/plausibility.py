"""Records too fast to be true: the FLOP count of a logged workload and a bound on any machine's peak.

``decode`` refuses records no measurement could have written (a negative cost, an unknown error
number); a well-formed record can still claim a speed no processor reaches (a hand-edited cost
of a nanosecond).  Such a record would win every ranking, so ``best`` and ``apply`` skip it with
a warning naming its line.

The bound is deliberately loose, because a log may come from a machine bigger than this one:
``PEAK_CORES`` cores, each retiring ``FMA_UNITS`` fused multiply-adds (2 FLOPs) per cycle on
full vectors of the record target's width (``Target.vector_bits``) holding the workload's
narrowest element type, at ``PEAK_CLOCK_HZ``.  Targets that are not CPUs get ``ACCELERATOR_PEAK``.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Iterable, Iterator, Sequence

from tunecli.engine.ir.dtype import parse_dtype
from tunecli.engine.log.record import LogRecord, SkipWarnings
from tunecli.engine.ops.registry import workload_flop_rule
from tunecli.engine.target import Target, as_target
from tunecli.engine.task.task import TASK_TABLE, create
from tunecli.engine.task.workload_args import WorkloadArg
from tunecli.engine.task.workload_flop import count_workload_flop
from tunecli.errors import TuneError

logger = logging.getLogger("autotvm")

PEAK_CORES = 512
FMA_UNITS = 2
PEAK_CLOCK_HZ = 6.0e9
#: FLOPS no accelerator target (GPU, VTA) reaches.
ACCELERATOR_PEAK = 1.0e17

_FLOP_CACHE: dict[tuple[str, str, str], float | None] = {}


def workload_flop(name: str, args: Sequence[WorkloadArg], target: str | Target) -> float | None:
    """Return the FLOP count of a workload, or None when it cannot be known here.

    The template's own count when it is registered here (the built-ins, or one already
    imported) and accepts the arguments; else the count of TVM's workload arithmetic (the
    strategy row's ``workload_flop``, ``registry.workload_flop_rule``).  Cached per workload and
    target.

    Parameters
    ----------
    name : str
        Template name.
    args : tuple
        Serialized arguments (as in the log).
    target : str or Target

    Returns
    -------
    float or None
    """
    key = (name, repr(args), str(target))
    if key not in _FLOP_CACHE:
        _FLOP_CACHE[key] = (_template_flop(name, args, target)
                            or _float(count_workload_flop(workload_flop_rule(name), args)))
    return _FLOP_CACHE[key]


def _float(value: int | None) -> float | None:
    return float(value) if value else None


def _template_flop(name: str, args: Sequence[WorkloadArg], target: str | Target) -> float | None:
    if name not in TASK_TABLE:
        return None
    try:
        task = create(name, args, target)
    except (TuneError, ValueError, TypeError, AssertionError, ZeroDivisionError, IndexError, OverflowError):
        return None
    return float(task.flop) if task.flop else None


def _narrowest_bits(args: object) -> int:
    """Bits of the narrowest element type named in serialized arguments (32 when none is)."""
    found = []
    stack = [args]
    while stack:
        item = stack.pop()
        if isinstance(item, (list, tuple)):
            stack.extend(item)
        elif isinstance(item, str):
            try:
                dtype = parse_dtype(item)
            except TuneError:
                continue
            if dtype.bits >= 8:
                found.append(dtype.bits)
    return min(found, default=32)


def peak_flops(target: str | Target, args: Sequence[WorkloadArg] = ()) -> float:
    """Return FLOPS no machine of ``target`` exceeds on a workload with arguments ``args``.

    Parameters
    ----------
    target : str or Target
    args : serialized workload arguments, optional
        Their narrowest element type sets the vector lanes (float32 when none is named).

    Returns
    -------
    float
    """
    tgt = as_target(target)
    if tgt.kind != "llvm":
        return ACCELERATOR_PEAK
    lanes = max(1, tgt.vector_bits // _narrowest_bits(args))
    return PEAK_CORES * FMA_UNITS * 2 * lanes * PEAK_CLOCK_HZ


def plausible(records: Iterable[LogRecord]) -> Iterator[LogRecord]:
    """Yield the records of ``records`` except those faster than ``peak_flops`` allows.

    A skipped record is named in a warning with its file and line (the first of each log; the
    others are counted).  Failed measurements and records of workloads of unknown FLOP count
    pass through.

    Parameters
    ----------
    records : iterable of LogRecord

    Yields
    ------
    LogRecord
    """
    return (record for record, ok in judged(records) if ok)


def judged(records: Iterable[LogRecord]) -> Iterator[tuple[LogRecord, bool]]:
    """Yield each record of ``records`` with whether it is plausible (see :func:`plausible`,
    which warns the same way of the implausible ones).

    Parameters
    ----------
    records : iterable of LogRecord

    Yields
    ------
    (LogRecord, bool)
    """
    warnings: dict[str, SkipWarnings] = {}
    for record in records:
        inp, res = record.inp, record.result
        flop = workload_flop(inp.task.name, inp.task.args, inp.target) if res.ok else None
        ok = True
        if flop:
            flops = flop / res.mean_cost if res.mean_cost > 0 else math.inf
            peak = peak_flops(inp.target, inp.task.args)
            if flops > peak:
                skipped = warnings.setdefault(record.path, SkipWarnings(record.path))
                skipped.add(record.line, "faster than any machine",
                            f"a record of {flops / 1e9:.6g} GFLOPS ({flop:.6g} FLOP in "
                            f"{res.mean_cost:.3g} s), more than any machine of target {inp.target} "
                            f"reaches ({peak / 1e9:.6g} GFLOPS)")
                ok = False
        yield record, ok
    for skipped in warnings.values():
        skipped.summarise()
