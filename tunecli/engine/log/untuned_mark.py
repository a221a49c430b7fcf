"""Whether a log's ``"untuned"`` mark still names the config an untuned build runs.

``tune`` marks the line of the config the untuned build ran on the day of the tune
(``tuner.untuned``), so that the ranking keeps that config unless a record beats it by the margin
(``layout_choice``).  The untuned build takes its config from the target's pre-tuned packages, else
the nearest package record, else the template's fallback rules; when one of those changes after the
tune, the marked config is no longer what an untuned build runs, and honouring the mark would keep
a config that is neither the untuned build's nor the fastest.  A mark is *current* when its
record's knobs (``layout_choice.config_knobs``) equal those of today's untuned answer for the
record's workload and target (a fallback answer traced: ``layout_choice.fallback_knobs``); a mark
that cannot be checked (a template unknown here) is current.  A stale mark is taken off the record,
which then competes as an ordinary record, and kept as ``config.stale_untuned`` so that ``best``,
``inspect`` and ``apply`` can say so.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from tunecli.engine.log import tophub
from tunecli.engine.log.layout_choice import config_knobs, fallback_knobs, is_untuned
from tunecli.engine.log.record import Record
from tunecli.engine.measure.result import MeasureInput
from tunecli.engine.target import Target
from tunecli.engine.task.space import ConfigSpace

#: What the untuned build answers a workload with on a target: ``history_best.untuned_answer``.
UntunedAnswer = Callable[[Target, tuple], ConfigSpace]

#: The untuned build's knobs per (target text, workload, package files and their modification times).
_KNOBS: dict[tuple, tuple | None] = {}


def untuned_knobs(target: Target, workload: tuple, answer: UntunedAnswer) -> tuple | None:
    """``config_knobs`` of the config an untuned build runs for ``workload`` on ``target``.

    Parameters
    ----------
    target : Target
    workload : tuple
    answer : callable
        ``answer(target, workload)``: the untuned build's dispatch answer (``history_best.untuned_answer``).

    Returns
    -------
    tuple or None
        None when it cannot be told (the template cannot be traced here).
    """
    stamp = tuple((str(p), p.stat().st_mtime_ns) for p in tophub.package_files(target))
    key = (str(target), workload, stamp)
    if key not in _KNOBS:
        with target:
            config = answer(target, workload)
        _KNOBS[key] = fallback_knobs(target, workload) if getattr(config, "is_fallback", False) \
            else config_knobs(config)
    return _KNOBS[key]


def mark_is_current(inp: MeasureInput, answer: UntunedAnswer) -> bool:
    """Whether the mark of ``inp``'s config (marked untuned) still names the untuned build's config;
    a stale mark is moved to ``inp.config.stale_untuned`` (the record competes as an ordinary one).

    Parameters
    ----------
    inp : MeasureInput
        The input of a record marked untuned.
    answer : callable
        As ``untuned_knobs`` takes it.

    Returns
    -------
    bool
    """
    today = untuned_knobs(inp.target, inp.task.workload, answer)
    if today is None or config_knobs(inp.config) == today:
        return True
    inp.config.stale_untuned, inp.config.untuned = inp.config.untuned, None
    return False


def drop_stale_marks(records: Iterable[Record], answer: UntunedAnswer) -> list[MeasureInput]:
    """Take stale marks off ``records`` (``mark_is_current``); the inputs whose mark was stale."""
    return [inp for inp, _ in records if is_untuned(inp.config) and not mark_is_current(inp, answer)]


def stale_mark(config: ConfigSpace) -> str | None:
    """The mark a record had when it was found stale (where the untuned build took it from), else None."""
    return getattr(config, "stale_untuned", None)


def stale_text(inp: MeasureInput) -> str:
    """What to say of a record whose untuned mark was found stale."""
    return (f"config {inp.config.index}, marked untuned ({stale_mark(inp.config)}) by the tune, is no longer "
            "what the untuned build runs (the packages or fallback rules changed since): ranked as an "
            "ordinary record")
