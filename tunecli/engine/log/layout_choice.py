"""Which of a workload's records answers: the untuned config and the default layout win near-ties.

A record's measured time is not its kernel's time in a network: timings of one config differ from
run to run by a few percent (``MARGIN``), and a kernel in a network also pays what its own
measurement does not see (layout transforms around it, the cache state its neighbours leave). So
among a workload's records the fastest does not simply answer; each record has a *standing*:

1. the record of the **untuned config**, the one the untuned build runs (the line ``tune`` measures
   first, marked ``"untuned"``: ``record.UNTUNED_SOURCES``; every record of that config counts);
2. a record in the template's **default layouts** (when the records are in several layouts);
3. any other record.

A record answers over the best record of a higher standing only when it is faster than it by more
than ``MARGIN``: the fastest record that beats every higher standing by the margin answers (ties
keep the first seen).  So a short tune whose records are a few percent faster than the untuned
config keeps the untuned build's config, and a record in other layouts must be clearly faster than
the default-layout ones.  ``explain`` says which record answers and why.

A template's layout knobs (``LAYOUT_KNOBS``: a convolution's input and output channel blocks) choose
the layouts of its data and output.  The template's fallback config (TVM's ``_fallback_schedule``)
picks the *default* blocks, those an untuned build runs with, which agree from one convolution to
the next; a record in other blocks makes the network build insert layout transforms around its
kernel.  Records of a workload without a default-layout record, or without layout knobs, share
one standing below the untuned config's.

``ChosenTable`` makes that choice when a key is first read: finding a default layout traces the
template, so a table loaded from a whole package traces only the workloads asked for.  A traced
default layout is kept in the kernel cache (``codegen.kernel_cache``, keyed by the workload, the
target and the compiler's sources, so a template's change misses), so the next build traces none.
"""

from __future__ import annotations

import ast
import logging
from collections.abc import Callable, ItemsView, Iterable, Iterator, Mapping, ValuesView
from dataclasses import dataclass
from typing import TypeAlias

from tunecli.engine.codegen.kernel_cache import cache_key, default_cache
from tunecli.engine.log.record import Record
from tunecli.engine.measure.result import MeasureInput
from tunecli.engine.target import Target, as_target
from tunecli.engine.task.fallback_config import FallbackConfigEntity
from tunecli.engine.task.space import ConfigSpace, Entity
from tunecli.engine.task.task import TASK_TABLE, create

logger = logging.getLogger("autotvm")

#: Knobs that choose a template's data and output layouts (a convolution's channel blocks).
LAYOUT_KNOBS = ("tile_ic", "tile_oc")

#: How much faster (a fraction of its cost) a record must be than the best record of a higher standing
#: (the untuned config's, the default layouts') to answer instead of it.  It must exceed the usual
#: difference between two timings of one config on a quiet machine (``bench_measure_stability.py``
#: prints its percentiles; ``benchmarks/README.md`` has the figures), and a kernel in a network pays
#: costs its own timing does not count (layout transforms, its neighbours' cache state).
MARGIN = 0.05

#: The fallback config's knobs (``config_knobs``) per (target text, workload); None when the template
#: cannot be traced for it.
_DEFAULTS: dict[tuple[str, tuple], tuple | None] = {}
#: What a table is made or updated from: a mapping of keys to records, or (key, record) pairs.
TableItems: TypeAlias = Mapping[tuple, Record | None] | Iterable[tuple[tuple, Record | None]]


def entity_key(entity: Entity) -> object:
    """What identifies an entity within its knob, as a value that compares equal across copies (a
    split's inner sizes: the outer one may be -1; a reorder's permutation; an annotation's list)."""
    size = getattr(entity, "size", None)
    if size is not None:
        return tuple(size[1:])
    for name in ("perm", "anns", "val"):
        if hasattr(entity, name):
            value = getattr(entity, name)
            return tuple(value) if isinstance(value, list) else value
    return entity


def layout_key(config: ConfigSpace) -> tuple | None:
    """The layout knobs of ``config`` as ``((name, entity key), ...)``; None when it has none."""
    names = [name for name in LAYOUT_KNOBS if _has_knob(config, name)]
    return tuple((name, entity_key(config[name])) for name in names) if names else None


def config_knobs(config: ConfigSpace) -> tuple | None:
    """What tells two configs apart, knob by knob (``((name, entity key), ...)``); None for a fallback
    config not yet filled (no knobs)."""
    names = list(config)
    return tuple((name, entity_key(config[name])) for name in names) if names else None


def default_layout(target: Target | str, workload: tuple) -> tuple | None:
    """``layout_key`` of the template's fallback config for ``workload`` on ``target``; None when the
    template cannot be traced for it or has no layout knobs."""
    knobs = dict(fallback_knobs(target, workload) or ())
    layout = tuple((name, knobs[name]) for name in LAYOUT_KNOBS if name in knobs)
    return layout or None


def fallback_knobs(target: Target | str, workload: tuple) -> tuple | None:
    """``config_knobs`` of the template's fallback config for ``workload`` on ``target`` (what an
    untuned build runs without a package record; traced once per process and kept in the kernel
    cache); None when the template cannot be traced for it."""
    key = (str(target), workload)
    if key not in _DEFAULTS:
        _DEFAULTS[key] = None
        if workload and workload[0] in TASK_TABLE:
            _DEFAULTS[key] = _stored_fallback_knobs(as_target(target), workload)
    return _DEFAULTS[key]


def _stored_fallback_knobs(target: Target, workload: tuple) -> tuple | None:
    """``fallback_knobs`` as the kernel cache holds it, else traced (and stored there)."""
    cache = default_cache()
    entry = cache_key({"fallback knobs": repr(workload)}, target) if cache is not None else ""
    stored = cache.get(entry) if cache is not None else None
    if stored is not None:
        try:
            return ast.literal_eval(stored.decode())
        except (ValueError, SyntaxError, UnicodeDecodeError):
            logger.warning("fallback knobs: an unreadable cache entry for %s is traced again", workload[0])
    try:
        task = create(workload[0], workload[1:], target)
        fallback = FallbackConfigEntity()
        task.instantiate(fallback)
        knobs = config_knobs(fallback)
    except Exception as err:  # noqa: BLE001 - an untraceable record competes by cost alone
        logger.debug("fallback knobs: %s cannot be traced: %s", workload[0], err)
        return None
    if cache is not None and _reads_back(knobs):
        cache.put(entry, repr(knobs).encode())
    return knobs


def _reads_back(value: object) -> bool:
    """Whether ``repr(value)`` reads back (``ast.literal_eval``) as ``value``."""
    try:
        return ast.literal_eval(repr(value)) == value
    except (ValueError, SyntaxError):
        return False


def has_default_layout(inp: MeasureInput) -> bool:
    """True when the record of ``inp`` (a MeasureInput) is in its template's default layouts."""
    mine = layout_key(inp.config)
    return mine is not None and mine == default_layout(inp.target, inp.task.workload)


@dataclass(frozen=True)
class Choice:
    """The record of a workload that answers, and why (``explain``)."""

    record: Record
    #: one line: ``"the fastest record"``, ``"the untuned config (package): config 9 is only 2.0% faster
    #: (margin 5%)"``, ...
    why: str


def is_untuned(config: ConfigSpace) -> bool:
    """True when ``config`` is the untuned build's config of its task (a line marked ``"untuned"``)."""
    return getattr(config, "untuned", None) is not None


def mark_untuned(records: Iterable[Record]) -> None:
    """Mark every record of a config that one record marks untuned (a re-measurement of the untuned
    config counts as it does).

    Parameters
    ----------
    records : iterable of (MeasureInput, MeasureResult)
        Records of one task (configs are told apart by index).
    """
    records = list(records)
    marked = {int(inp.config.index): inp.config.untuned for inp, _ in records if is_untuned(inp.config)}
    for inp, _ in records:
        if int(inp.config.index) in marked and not is_untuned(inp.config):
            inp.config.untuned = marked[int(inp.config.index)]


def choose(candidates: Iterable[Record]) -> Record | None:
    """The record of one workload that answers (see the module docstring).

    Parameters
    ----------
    candidates : iterable of (MeasureInput, MeasureResult)
        Successful records of one workload, in the order seen (ties keep the first).

    Returns
    -------
    (MeasureInput, MeasureResult) or None
        None when there is no candidate.
    """
    choice = explain(candidates)
    return None if choice is None else choice.record


def explain(candidates: Iterable[Record]) -> Choice | None:
    """``choose``'s record with the reason it answers.

    Parameters
    ----------
    candidates : iterable of (MeasureInput, MeasureResult)

    Returns
    -------
    Choice or None
        None when there is no candidate.
    """
    ranked = sorted(candidates, key=lambda pair: pair[1].mean_cost)  # stable: ties keep the first seen
    if not ranked:
        return None
    fastest = ranked[0]
    several_layouts = len({layout_key(inp.config) for inp, _ in ranked}) > 1
    if is_untuned(fastest[0].config):
        return Choice(fastest, f"the untuned config ({fastest[0].config.untuned}), the fastest record")
    if not any(is_untuned(inp.config) for inp, _ in ranked) and (
            not several_layouts or has_default_layout(fastest[0])):
        return Choice(fastest, "the fastest record")
    standing = {id(pair): _standing(pair[0], several_layouts) for pair in ranked}
    best: dict[int, Record] = {}
    for pair in ranked:
        best.setdefault(standing[id(pair)], pair)
    for pair in ranked:
        above = [best[s] for s in sorted(best) if s < standing[id(pair)]]
        if all(pair[1].mean_cost < held[1].mean_cost * (1 - MARGIN) for held in above):
            return Choice(pair, _why(pair, above, fastest))
    raise AssertionError("the best record of the highest standing always answers")


def _standing(inp: MeasureInput, several_layouts: bool) -> int:
    """0: the untuned config; 1: the default layouts (of records in several layouts); 2: other."""
    if is_untuned(inp.config):
        return 0
    return 1 if not several_layouts or has_default_layout(inp) else 2


def _why(chosen: Record, above: list[Record], fastest: Record) -> str:
    if chosen is fastest and not above:
        return "the fastest record"
    if chosen is fastest:
        faster = min(1 - chosen[1].mean_cost / held[1].mean_cost for held in above)
        return f"the fastest record: {faster:.1%} faster than the {_what(above[-1])}, over {MARGIN:.0%}"
    behind = 1 - fastest[1].mean_cost / chosen[1].mean_cost
    return f"the {_what(chosen)}: config {fastest[0].config.index} is only {behind:.1%} faster " \
           f"(margin {MARGIN:.0%})"


def _what(pair: Record) -> str:
    config = pair[0].config
    if is_untuned(config):
        return f"untuned config ({config.untuned})"
    return "default-layout record"


class ChosenTable(dict[tuple, Record | None]):
    """A dict of records whose keys with records in several layouts are chosen (``choose``) when a
    value is first read, not when they are stored; it reads as the table of the choices made eagerly.

    ``defer(key, candidates)`` marks ``key`` for a choice among ``candidates()`` (called at reading
    time); storing or deleting the key cancels it.
    """

    def __init__(self, *args: TableItems, **kwargs: Record | None) -> None:
        super().__init__(*args, **kwargs)
        self._pending: dict[tuple, Callable[[], Iterable[Record]]] = {}
        #: per key chosen among several standings: why its record answers (``Choice.why``)
        self.why: dict[tuple, str | None] = {}

    def defer(self, key: tuple, candidates: Callable[[], Iterable[Record]]) -> None:
        """Choose the record of ``key`` among ``candidates()`` when it is first read."""
        if key not in self:
            super().__setitem__(key, None)
        self._pending[key] = candidates

    def _settle(self, key: object) -> None:
        candidates = self._pending.pop(key, None)  # type: ignore[call-overload]
        if candidates is not None:
            choice = explain(candidates())
            super().__setitem__(key, None if choice is None else choice.record)
            self.why[key] = None if choice is None else choice.why

    def _settle_all(self) -> None:
        for key in list(self._pending):
            self._settle(key)

    def __getitem__(self, key: tuple) -> Record:
        self._settle(key)
        return super().__getitem__(key)

    def get(self, key: tuple, default: Record | None = None) -> Record | None:  # type: ignore[override]
        self._settle(key)
        return super().get(key, default)

    def __setitem__(self, key: tuple, value: Record) -> None:
        self._pending.pop(key, None)
        super().__setitem__(key, value)

    def __delitem__(self, key: tuple) -> None:
        self._pending.pop(key, None)
        super().__delitem__(key)

    def __iter__(self) -> Iterator[tuple]:  # not dict's own: dict(table) then reads values through get
        return super().__iter__()

    def pop(self, key: tuple, *default: Record | None) -> Record | None:  # type: ignore[override]
        self._settle(key)
        return super().pop(key, *default)

    def setdefault(self, key: tuple, default: Record | None = None) -> Record | None:
        self._settle(key)
        return super().setdefault(key, default)

    def values(self) -> ValuesView[Record | None]:
        self._settle_all()
        return super().values()

    def items(self) -> ItemsView[tuple, Record | None]:
        self._settle_all()
        return super().items()

    def popitem(self) -> tuple[tuple, Record]:
        self._settle_all()
        return super().popitem()

    def copy(self) -> dict[tuple, Record]:
        self._settle_all()
        return dict(super().items())

    def update(self, *args: TableItems, **kwargs: Record | None) -> None:  # type: ignore[override]
        for key, value in dict(*args, **kwargs).items():
            self[key] = value

    def clear(self) -> None:
        self._pending.clear()
        super().clear()

    def __eq__(self, other: object) -> bool:
        self._settle_all()
        return super().__eq__(other)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        self._settle_all()
        return super().__repr__()

    def __or__(self, other: Mapping[tuple, Record | None]) -> dict[tuple, Record | None]:  # type: ignore[override]
        self._settle_all()
        return dict(super().items()) | other

    def __ior__(self, other: Mapping[tuple, Record | None]) -> ChosenTable:  # type: ignore[override]
        self.update(other)
        return self

    def __reduce__(self) -> tuple[type[ChosenTable], tuple[dict[tuple, Record | None]]]:
        self._settle_all()
        return (ChosenTable, (dict(super().items()),))


def _has_knob(config: ConfigSpace, name: str) -> bool:
    try:
        return name in config
    except TypeError:
        return False
