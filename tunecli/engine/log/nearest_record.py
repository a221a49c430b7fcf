"""The config of a workload without a record, chosen from the nearest record of its template.

A generalisation of TVM's ``fallback_with_reference_log``.  The candidates are the records of the
same template measured on a machine that may stand in for the query's (``record_machine``): this
CPU's records (target kind, device, model, GPU architecture and, for ``llvm``, the CPU the target
compiles for), and only when none of them is comparable, those of another x86 CPU of the same
vector width and fused multiply-add (never across vector widths).  Among them the nearest workload
is the one whose arguments differ least: tensor shapes by the distance of their logarithms (a channel
count twice as large is 1 away; an extent of 1 against a larger one makes no candidate: a one-row
product or a 1x1 kernel is scheduled unlike a many-row product or a 3x3 kernel), every other
number (strides, padding, dilation) by ``ATTRIBUTE_MISMATCH`` when it differs, and text (layouts,
dtypes) not at all (else the record is no candidate).  Ties go to a record of the user's logs
before a package's, then to the faster record, then to the smaller workload text, so the choice
depends on the records only.  The ``RERANKED`` nearest are then ranked by that distance plus what
the knobs to transfer split (``knob_distance``: the extents of their split knobs, the candidates
of their other knobs; each record's space traced once per process): of two workloads about as
near, the one whose register tile splits the same output width wins, but a differing stride is
never outweighed by the knobs' extents.

Its config is moved into the queried workload's space knob by knob: each knob takes the entity
of its space nearest to the record's (a split by the logarithms of its inner factors, so factors
that divide stay and others become the nearest factorisation; another knob equal or not).  The
layout knobs (``LAYOUT_KNOBS``: a convolution's channel blocks) take the template's fallback
blocks instead, the default layouts the graph tuner also measures (``graph_tuner.default_layouts``):
neighbouring convolutions then agree on their blocks and the build needs no more layout
transforms than with fallback configs.  Knobs chosen for the number of output tiles
(``EXTENT_KNOBS``: the Winograd templates' tile size and tiles per register tile) take the record's
entity only when its output has the query's height and width (``same_extents``), else the
fallback's: a 7x7 record's six tiles per register tile would compute the one tile of a 2x2 output
six times.  Knobs the record lacks keep the fallback's entity.  The
result is an entity of the space (a valid index) whose ``source`` is ``ConfigSource("nearest",
...)`` naming the record (its CPU when another CPU's, and the ``EXTENT_KNOBS`` left to the
fallback).

A template that shares another's knobs and space for the same convolution (a kernel job's
``conv2d_nchw_blocked.x86`` and ``conv2d_NCHWc.x86``: ``ops.x86.conv2d_nchw_blocked.twin_workload``)
is served by that template's logged records too (``TWIN_ORIGINS``): a record of the twin workload
answers as a record of the workload does (:func:`served_by_twin`, after the workload's own records
everywhere), and records of the twin template are candidates for the nearest record, compared in
the twin's form.  A pre-tuned package's twin records do not serve: they were chosen for a network,
measured writing the blocked layout and chosen by the graph tuner for their neighbours' blocks,
and a kernel writing NCHW favours other register tiles (``benchmarks/README.md``, kernel jobs).
"""

from __future__ import annotations

import copy
import logging
import math
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass

from tunecli.engine.log.layout_choice import LAYOUT_KNOBS, Entity
from tunecli.engine.log.record_machine import SAME_CPU, machine_rank
from tunecli.engine.ops.x86.conv2d_nchw_blocked import twin_workload
from tunecli.engine.target import Target
from tunecli.engine.task.config_source import ConfigSource, config_source
from tunecli.engine.task.fallback_config import FallbackConfigEntity
from tunecli.engine.task.space import ConfigEntity, ConfigSpace
from tunecli.engine.task.space_entities import OtherOptionEntity, SplitEntity, SplitSpace
from tunecli.engine.task.task import TASK_TABLE, create
from tunecli.engine.task.text import workload_text

logger = logging.getLogger("autotvm")

#: Distance of one differing non-shape number (stride, padding, dilation): as a shape 16× apart.
ATTRIBUTE_MISMATCH = 4.0
#: Knobs chosen for the number of output tiles (the Winograd templates' tile size and tiles per
#: register tile: more tiles per register tile than the output has repeats tiles): the record's entity
#: only when its output has the query's extents (``same_extents``), else the fallback's.
EXTENT_KNOBS = ("tile_m", "tile_p")
#: How many of the nearest workloads are ranked again by their knobs' extents.
RERANKED = 8
_ORIGIN_RANK = {"log": 0, "package": 1}
#: The origins (``ConfigSource.kind``) of a twin template's records that serve a workload.
TWIN_ORIGINS = ("log",)
#: The config space of each (target, workload) traced here (None: the template cannot be traced).
_SPACES: dict[tuple[str, tuple], ConfigSpace | None] = {}


@dataclass(frozen=True)
class Reference:
    """A record that may stand in for another workload's: its target, workload, config and origin.

    Attributes
    ----------
    target : Target
    workload : tuple
        ``(template name, *args)``.
    config : ConfigEntity
    cost : float
        Mean seconds.
    origin : ConfigSource
        ``log`` or ``package``, with the file.
    """

    target: Target
    workload: tuple
    config: ConfigEntity
    cost: float
    origin: ConfigSource


def workload_distance(a: tuple, b: tuple) -> float | None:
    """How far the arguments of two workloads of one template are apart; None when they cannot be
    compared (another template, another structure, a differing dtype or layout).

    Parameters
    ----------
    a, b : tuple
        ``(template name, *args)``, tensors as ``("TENSOR", shape, dtype)``.

    Returns
    -------
    float or None
    """
    if not a or not b or a[0] != b[0]:
        return None
    return _distance(a[1:], b[1:], in_shape=False)


def _distance(a: object, b: object, in_shape: bool) -> float | None:
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        if len(a) != len(b):
            return None
        shape = len(a) == 3 and a[0] == "TENSOR" and b[0] == "TENSOR"
        total = 0.0
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            d = _distance(x, y, in_shape or (shape and i == 1))
            if d is None:
                return None
            total += d
        return total
    if _is_number(a) and _is_number(b):
        if in_shape:
            if (a == 1) != (b == 1):
                return None  # a single row, channel or tap is another kind of loop nest
            return abs(math.log2(1 + abs(a)) - math.log2(1 + abs(b)))
        return 0.0 if a == b else ATTRIBUTE_MISMATCH
    return 0.0 if a == b else None


def _is_number(x: object) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def ranked_references(target: Target, workload: tuple, references: Iterable[Reference]) -> list[Reference]:
    """The references of ``workload``'s template (or its twin's) on machines that may stand in for
    ``target`` (``record_machine.machine_rank``), this CPU's first, then nearest first (ties as the
    module docstring says).

    Parameters
    ----------
    target : Target
        The query's target.
    workload : tuple
    references : iterable of Reference

    Returns
    -------
    list of Reference
        Empty when no reference of the template and a standing-in machine is comparable.
    """
    return [ref for _, ref in _ranked(target, workload, references)]


def _ranked(target: Target, workload: tuple,
            references: Iterable[Reference]) -> list[tuple[tuple, Reference]]:
    """``ranked_references`` with each one's key: (machine rank, workload distance, ties...)."""
    forms = [form for form in (workload, twin_workload(workload)) if form is not None]
    keyed = []
    for ref in references:
        rank = machine_rank(ref.target, target)
        if rank is None or (rank == SAME_CPU and ref.workload in forms):
            continue  # this CPU's record of the workload answers as a record (or, a package's twin, not)
        usable = forms if ref.origin.kind in TWIN_ORIGINS else forms[:1]
        distances = [d for d in (workload_distance(form, ref.workload) for form in usable) if d is not None]
        if not distances:
            continue
        key = (rank, min(distances), _ORIGIN_RANK.get(ref.origin.kind, 2), ref.cost, repr(ref.workload),
               ref.config.index)
        keyed.append((key, ref))
    keyed.sort(key=lambda pair: pair[0])
    return keyed


def knob_distance(a: ConfigSpace, b: ConfigSpace) -> float:
    """How far two spaces of one template are apart in the knobs a transfer takes over (layout
    knobs excluded): split knobs by the logarithms of the extents they split, other knobs by
    ``ATTRIBUTE_MISMATCH`` when their candidates differ, and a knob only one space has by as much.

    Parameters
    ----------
    a, b : ConfigSpace

    Returns
    -------
    float
    """
    total = 0.0
    for name in sorted(set(a.space_map) | set(b.space_map)):
        if name in LAYOUT_KNOBS:
            continue
        x, y = a.space_map.get(name), b.space_map.get(name)
        if x is None or y is None or type(x) is not type(y):
            total += ATTRIBUTE_MISMATCH
        elif isinstance(x, SplitSpace):
            total += abs(math.log2(max(x.product, 1)) - math.log2(max(y.product, 1)))
        elif repr(x.entities) != repr(y.entities):
            total += ATTRIBUTE_MISMATCH
    return total


def traced_space(target: Target, workload: tuple) -> ConfigSpace | None:
    """The config space of ``workload`` on ``target`` (traced once per process; None when the
    template cannot be traced for it)."""
    key = (str(target), workload)
    if key not in _SPACES:
        try:
            _SPACES[key] = create(workload[0], workload[1:], target).config_space
        except Exception as err:  # noqa: BLE001 - a record an older template cannot trace is no candidate
            logger.debug("nearest record: %s cannot be traced: %s", workload[0], err)
            _SPACES[key] = None
    return _SPACES[key]


def nearest_reference(target: Target, workload: tuple, references: Iterable[Reference],
                      space: ConfigSpace | None = None) -> Reference | None:
    """The reference nearest to ``workload`` among those of its template and the machines that may
    stand in for ``target``; with ``space`` (the workload's), the ``RERANKED`` nearest of the best
    machine rank ranked again by workload distance plus ``knob_distance``.

    Parameters
    ----------
    target : Target
        The query's target.
    workload : tuple
    references : iterable of Reference
    space : ConfigSpace, optional

    Returns
    -------
    Reference or None
        None when no reference of the template and a standing-in machine is comparable.
    """
    ranked = _ranked(target, workload, references)
    if not ranked:
        return None
    best_rank = ranked[0][0][0]
    ranked = [(key, ref) for key, ref in ranked if key[0] == best_rank][:RERANKED]
    if space is None or len(ranked) < 2:
        return ranked[0][1]
    scored = []
    for order, (key, ref) in enumerate(ranked):
        other = traced_space(ref.target, ref.workload)
        scored.append((math.inf if other is None else key[1] + knob_distance(space, other), order, ref))
    return min(scored, key=lambda item: item[:2])[2]


def same_extents(workload: tuple, other: tuple) -> bool:
    """True when ``other`` (a record's workload, maybe of the twin template) has the output
    extents of ``workload``: the same data height and width, strides, padding and dilation."""
    for form in (workload, twin_workload(workload)):
        if form is not None and form[0] == other[0] and len(form) == len(other) > 5:
            data, theirs = form[1], other[1]
            return (isinstance(data, tuple) and isinstance(theirs, tuple) and len(data) == len(theirs) == 3
                    and tuple(data[1][2:]) == tuple(theirs[1][2:]) and form[3:6] == other[3:6])
    return False


def entity_distance(a: Entity, b: Entity) -> float:
    """How far two entities of one knob are apart: splits by the logarithms of their inner factors
    (the outer one is what remains), numeric options by their logarithms, anything else 0 or 1."""
    if isinstance(a, SplitEntity) and isinstance(b, SplitEntity):
        if len(a.size) != len(b.size):
            return math.inf
        return sum(abs(math.log2(max(x, 1)) - math.log2(max(y, 1))) for x, y in zip(a.size[1:], b.size[1:],
                                                                                    strict=True))
    if isinstance(a, OtherOptionEntity) and isinstance(b, OtherOptionEntity):
        x, y = a.val, b.val
        if x == y and type(x) is type(y):
            return 0.0
        if _is_number(x) and _is_number(y):
            return abs(math.log2(1 + abs(x)) - math.log2(1 + abs(y)))
        return 1.0
    return 0.0 if repr(a) == repr(b) else 1.0


def nearest_position(entities: Sequence[Entity], wanted: Entity) -> int:
    """The position of the entity of ``entities`` nearest to ``wanted`` (the first of equals)."""
    return min(range(len(entities)), key=lambda i: (entity_distance(entities[i], wanted), i))


def transfer(space: ConfigSpace, reference: ConfigEntity, default: ConfigSpace,
             from_default: Collection[str] = ()) -> ConfigEntity | None:
    """``reference``'s config moved into ``space`` knob by knob (layout knobs and ``from_default``
    from ``default``).

    Parameters
    ----------
    space : ConfigSpace
        The queried workload's space.
    reference : ConfigEntity
        The nearest record's config.
    default : ConfigSpace
        The template's fallback config of the queried workload (instantiated).
    from_default : collection of str
        More knobs that take ``default``'s entity.

    Returns
    -------
    ConfigEntity or None
        An entity of ``space``; None when the knob-by-knob choice is not a valid index.
    """
    positions = []
    for name, knob in space.space_map.items():
        if (name in LAYOUT_KNOBS or name in from_default) and name in default:
            wanted = default[name]
        elif name in reference and type(reference[name]) is type(knob.entities[0]):
            wanted = reference[name]
        elif name in default:
            wanted = default[name]
        else:
            wanted = knob.entities[0]
        positions.append(nearest_position(knob.entities, wanted))
    point = space.knob2point(positions)
    return space.get(point) if space.is_index_valid(point) else None


def nearest_config(target: Target, workload: tuple, references: Iterable[Reference]) -> ConfigEntity | None:
    """The config of ``workload`` chosen from its nearest reference (see the module docstring).

    Parameters
    ----------
    target : Target
    workload : tuple
        A workload of a registered template.
    references : iterable of Reference

    Returns
    -------
    ConfigEntity or None
        With ``source = ConfigSource("nearest", ...)``; None when no reference of the template and
        machine is comparable, or the template cannot be traced for ``workload``.
    """
    if not workload or workload[0] not in TASK_TABLE:
        return None
    references = list(references)
    if not ranked_references(target, workload, references):
        return None
    try:
        task = create(workload[0], workload[1:], target)
        default = FallbackConfigEntity()
        task.instantiate(default)
    except Exception as err:  # noqa: BLE001 - the fallback config stays; the build reports the template's error
        logger.debug("nearest record: %s cannot be traced: %s", workload[0], err)
        return None
    ref = nearest_reference(target, workload, references, task.config_space)
    if ref is None:
        return None
    space = task.config_space
    kept = [] if same_extents(workload, ref.workload) else [k for k in EXTENT_KNOBS if k in space.space_map]
    config = transfer(task.config_space, ref.config, default, kept)
    if config is None:
        return None
    where = f" in {ref.origin.detail}" if ref.origin.detail else ""
    if machine_rank(ref.target, target) != SAME_CPU:
        where += f", measured on {ref.target.llvm_cpu}"
    if kept:
        where += f"; {', '.join(kept)} of the fallback"
    config.source = ConfigSource("nearest", f"{workload_text(ref.workload[0], ref.workload[1:])} "
                                            f"({ref.origin.kind}{where})")
    return config


def served_by_twin(config: ConfigSpace, twin: tuple) -> ConfigSpace | None:
    """``config``, a record of ``twin`` (``twin_workload`` of the queried workload), as the answer
    to the query: the same knobs, its source naming the twin's workload; None when its origin is
    not one of ``TWIN_ORIGINS`` (a package's record).

    Parameters
    ----------
    config : ConfigSpace or ConfigEntity
        What a dispatch context answered for ``twin``.
    twin : tuple
        ``(template name, *args)``.

    Returns
    -------
    ConfigSpace or ConfigEntity or None
        A copy: the record's own config keeps its source.
    """
    origin = config_source(config)
    if origin.kind not in TWIN_ORIGINS:
        return None
    answer = copy.copy(config)
    where = f" in {origin.detail}" if origin.detail else ""
    answer.source = ConfigSource(origin.kind, f"{workload_text(twin[0], twin[1:])}{where}")
    return answer
