"""ConfigSpace and ConfigEntity: the tunable knobs of a template.

A template is traced once with a fresh ``ConfigSpace``: every ``define_*`` call appends a knob
(``space_map``, definition order) and binds the knob's first entity.  Measuring or applying a
config runs the template with a ``ConfigEntity`` (``define_*`` are no-ops, ``cfg[name]`` gives
the concrete entity); without any record the ``FallbackConfigEntity``
(:mod:`tunecli.engine.task.fallback_config`) collects the space and keeps the entities a
schedule sets by hand.  The index API comes from ``SpaceIndex``; knob
feature vectors from ``knob_features``.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from operator import attrgetter
from typing import TYPE_CHECKING, Any, TypeAlias, TypedDict, Unpack

import numpy as np

from tunecli.engine.task.annotate_space import AnnotateEntity, AnnotateOptions, AnnotateSpace
from tunecli.engine.task.knob_features import entity_features
from tunecli.engine.task.space_entities import (
    Axis,
    KnobAxis,
    KnobValue,
    OtherOptionEntity,
    OtherOptionSpace,
    ReorderEntity,
    ReorderOptions,
    ReorderSpace,
    SplitEntity,
    SplitOptions,
    SplitSpace,
    TransformSpace,
    VirtualAxis,
)
from tunecli.engine.task.space_index import SpaceIndex, SpaceIndexError
from tunecli.errors import SpaceError

if TYPE_CHECKING:
    from tunecli.engine.ir.expr import Expr
    from tunecli.engine.te import IterVar

#: The value of one knob in a config.
Entity: TypeAlias = "SplitEntity | ReorderEntity | AnnotateEntity | OtherOptionEntity"
#: A config's knobs by name, in definition order.
EntityMap: TypeAlias = "OrderedDict[str, Entity]"

#: The tag of each knob kind in a config's JSON form (``[name, tag, value]``): entity class and value.
SPACE_TAGS: dict[str, tuple[type[Entity], Callable[[Entity], object]]] = {
    "sp": (SplitEntity, attrgetter("size")),
    "re": (ReorderEntity, attrgetter("perm")),
    "an": (AnnotateEntity, attrgetter("anns")),
    "ot": (OtherOptionEntity, attrgetter("val")),
}


class ConfigJson(TypedDict):
    """A config in log form (``ConfigEntity.to_json_dict``)."""

    index: int
    code_hash: str | None
    entity: list[tuple[str, str, object]]


class MultiFilterOptions(TypedDict):
    """The keyword options of ``multi_filter``."""

    filter: Callable[[EntityMap], bool]


class ConfigSpace(SpaceIndex):
    """The configuration space of a template, collected by tracing it once.

    Attributes
    ----------
    space_map : OrderedDict
        Knob name -> TransformSpace, in definition order.
    errors : list of str
        Messages recorded with ``raise_error``; ``valid()`` is ``not errors``.
    flop : float
        FLOPs declared with ``add_flop`` (0 when none).
    code_hash : str or None
    cost : float or None
        Mean cost, set on configs decoded from a log.
    is_fallback : bool
    """

    def __init__(self) -> None:
        self.space_map: OrderedDict[str, TransformSpace] = OrderedDict()
        self._collect = True
        self._entity_map: EntityMap = OrderedDict()
        self._constraints: list = []
        self.errors: list[str] = []
        self.code_hash: str | None = None
        self.flop: float = 0
        self.cost: float | None = None
        self.is_fallback = False
        self._shared_filter: Callable[[EntityMap], bool] | None = None
        self.clear_cache()

    # ----------------------------------------------------------------- definition
    @staticmethod
    def axis(var: int | VirtualAxis | IterVar) -> VirtualAxis:
        """Return a virtual axis for an int length, an IterVar or another virtual axis.

        Parameters
        ----------
        var : int, IterVar or VirtualAxis

        Returns
        -------
        VirtualAxis
        """
        return VirtualAxis(var)

    reduce_axis = axis

    def define_split(self, name: str, axis: KnobAxis, policy: str = "factors",
                     **kwargs: Unpack[SplitOptions]) -> list[Axis]:
        """Define a knob that splits ``axis`` into ``num_outputs`` axes.

        Parameters
        ----------
        name : str
        axis : int, IterVar or VirtualAxis
        policy : {"factors", "power2", "verbose", "candidate"}
        **kwargs
            ``num_outputs`` (required), ``max_factor``, ``filter``, ``no_tail``, ``candidate``.

        Returns
        -------
        list of Axis
        """
        return self._add_new_transform(SplitSpace, name, [axis], policy, kwargs.get("num_outputs", 0),
                                       **kwargs)

    def define_reorder(self, name: str, axes: Sequence[KnobAxis], policy: str,
                       **kwargs: Unpack[ReorderOptions]) -> list[Axis]:
        """Define a knob that permutes ``axes`` (``identity``, ``all``, ``interval_all``, ``candidate``).

        Parameters
        ----------
        name : str
        axes : list of IterVar or VirtualAxis
        policy : str
        **kwargs
            ``interval=(begin, end)`` or ``candidate=[[axes...], ...]``.

        Returns
        -------
        list of Axis
        """
        return self._add_new_transform(ReorderSpace, name, axes, policy, len(axes), **kwargs)

    def define_annotate(self, name: str, axes: Sequence[KnobAxis], policy: str,
                        **kwargs: Unpack[AnnotateOptions]) -> list[Axis]:
        """Define a knob that annotates ``axes`` (``try_unroll``, ``try_vec``, ``locate_cache``, ...).

        Parameters
        ----------
        name : str
        axes : list of IterVar or VirtualAxis
        policy : str
        **kwargs
            ``num_anchor`` for ``locate_cache``.

        Returns
        -------
        list of Axis
        """
        return self._add_new_transform(AnnotateSpace, name, axes, policy, len(axes), **kwargs)

    def define_knob(self, name: str, candidate: list[KnobValue]) -> list[Axis]:
        """Define a knob taking one of ``candidate`` (any JSON values), in list order.

        Parameters
        ----------
        name : str
        candidate : list

        Returns
        -------
        list
            Always empty.
        """
        return self._add_new_transform(OtherOptionSpace, name, [], None, 0, candidate=candidate)

    def multi_filter(self, **kwargs: Unpack[MultiFilterOptions]) -> None:
        """Mark indices invalid unless ``filter(entities)`` is true (entities: name -> entity).

        Parameters
        ----------
        **kwargs
            ``filter``: callable taking an OrderedDict of entities.
        """
        if self._collect:
            self.clear_cache()
            self._shared_filter = kwargs["filter"]

    def add_flop(self, flop: float | Expr) -> None:
        """Add ``flop`` floating point operations to this template's count.

        Parameters
        ----------
        flop : int, float or constant expression
        """
        self.flop += float(getattr(flop, "value", flop))

    def raise_error(self, msg: str) -> None:
        """Record an error found while instantiating the template; the config becomes invalid.

        Parameters
        ----------
        msg : str
        """
        self.errors.append(msg)

    def valid(self) -> bool:
        """Return True when no error was recorded.

        Returns
        -------
        bool
        """
        return not self.errors

    def _add_new_transform(self, space_class: type[TransformSpace], name: str, axes: Sequence[KnobAxis],
                           policy: str | None, num_output: int, **kwargs: object) -> list[Axis]:
        if self._collect:
            axes = [x if isinstance(x, (VirtualAxis, Axis)) else self.axis(x) for x in axes]
            space = space_class(axes, policy, **kwargs)
            self.space_map[name] = space
            self._bind_first_entity(name, space)
            self.clear_cache()
            return [Axis(space, i) for i in range(space.num_output)]
        return [Axis(None, i) for i in range(num_output)]

    def _bind_first_entity(self, name: str, space: TransformSpace) -> None:
        if len(space) == 0:
            raise SpaceError(f"knob {name!r}: {space!r} has no entity; relax its policy or filter")
        self._entity_map[name] = space[0]

    def get(self, index: int) -> ConfigEntity:
        """Return the config at ``index``.

        Parameters
        ----------
        index : int

        Returns
        -------
        ConfigEntity
        """
        index = int(index)
        self._check_index(index)
        if not self.is_index_valid(index):
            raise SpaceIndexError(f"Index does not correspond to the multi-filter condition, got index "
                                  f"{index}. Use is_index_valid to pre-check")
        return ConfigEntity(index, self.code_hash, self._entities_of(index), self._constraints)

    def __getstate__(self) -> dict[str, object]:
        # A multi-filter is usually a lambda: ship its result (one bool per index) instead.
        state = dict(self.__dict__)
        if self._shared_filter is not None:
            state["_filter_cache"] = self._valid_mask()
            state["_shared_filter"] = _PrecomputedFilter()
        return state

    # ----------------------------------------------------------------- mapping sugar
    def __iter__(self) -> Iterator[str]:
        return iter(self._entity_map)

    def __getitem__(self, name: str) -> Any:
        """The entity of knob ``name``: its kind (an ``Entity``) follows from the name, which the
        template knows, so it is left to the caller."""
        return self._entity_map[name]

    def __repr__(self) -> str:
        res = f"ConfigSpace (len={len(self)}, space_map=\n"
        for i, (name, space) in enumerate(self.space_map.items()):
            res += "  %2d %s: %s\n" % (i, name, space)  # noqa: UP031 - TVM's exact layout
        return res + ")"



class _PrecomputedFilter:
    """Stands for a multi-filter whose results travelled with a pickled space."""

    def __call__(self, entities: EntityMap) -> bool:
        raise SpaceError("the multi-filter of an unpickled ConfigSpace cannot be re-evaluated")


class ConfigEntity(ConfigSpace):
    """One concrete config: knob name -> entity, plus its index in the space.

    Parameters
    ----------
    index : int
    code_hash : str or None
    entity_map : OrderedDict
        Knob name -> entity, in definition order.
    constraints : list
    """

    def __init__(self, index: int, code_hash: str | None, entity_map: EntityMap, constraints: list):
        super().__init__()
        self.index = index
        self._collect = False
        self._entity_map = entity_map
        self._constraints = constraints
        self.code_hash = code_hash

    def get_flatten_feature(self) -> np.ndarray:
        """Return the knob feature vector (split sizes, permutations, one-hot annotations, values).

        Returns
        -------
        numpy.ndarray of float32
        """
        fea: list[float] = []
        for v in self._entity_map.values():
            fea.extend(entity_features(v))
        return np.array(fea, dtype=np.float32)

    def get_other_option(self) -> dict[str, KnobValue]:
        """Return the ``define_knob`` values as a dict name -> value.

        Returns
        -------
        dict
        """
        return {k: v.val for k, v in self._entity_map.items() if isinstance(v, OtherOptionEntity)}

    def to_json_dict(self) -> ConfigJson:
        """Return the log form ``{"index", "code_hash", "entity": [[name, tag, value], ...]}``.

        Returns
        -------
        dict
        """
        entity = []
        for name, v in self._entity_map.items():
            for tag, (cls, value_of) in SPACE_TAGS.items():
                if isinstance(v, cls):
                    entity.append((name, tag, value_of(v)))
                    break
            else:
                raise SpaceError(f"ConfigEntity.to_json_dict: knob {name!r} has an invalid entity {v!r}")
        return {"index": int(self.index), "code_hash": self.code_hash, "entity": entity}

    @staticmethod
    def from_json_dict(json_dict: ConfigJson) -> ConfigEntity:
        """Build a config from the log form written by ``to_json_dict``.

        Parameters
        ----------
        json_dict : dict

        Returns
        -------
        ConfigEntity
        """
        entity_map: EntityMap = OrderedDict()
        for key, tag, value in json_dict["entity"]:
            if tag not in SPACE_TAGS:
                raise SpaceError(f"Invalid config knob type: {tag}")
            entity_map[str(key)] = SPACE_TAGS[tag][0](value)
        return ConfigEntity(json_dict["index"], json_dict["code_hash"], entity_map, [])

    def _entity_text(self) -> str:
        return "[" + ", ".join(f"({k!r}, {v!r})" for k, v in self._entity_map.items()) + "]"

    def __repr__(self) -> str:
        return f"{self._entity_text()},{self.code_hash},{self.index}"
