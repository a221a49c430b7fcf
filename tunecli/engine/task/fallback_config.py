"""``FallbackConfigEntity``: the config a template runs with when no record matches its workload.

It collects the space while the template runs (each knob takes its first value) and can be
refined as TVM's is: ``fallback_split`` (split factors that fit given limits) and
``fallback_with_reference_log`` (the split factors of the most similar logged workload).
"""

from __future__ import annotations

import math
from collections import OrderedDict
from collections.abc import Iterable
from typing import Protocol

from tunecli.engine.task.factors import get_factors
from tunecli.engine.task.space import ConfigEntity, Entity
from tunecli.engine.task.space_entities import SplitEntity, SplitSpace, TransformSpace
from tunecli.errors import SpaceError


class HasConfig(Protocol):
    """What a reference record's input offers here (a ``MeasureInput``, a layer above): its config."""

    config: ConfigEntity


class FallbackConfigEntity(ConfigEntity):
    """The config used when no record exists: collects the space, keeps entities set by hand."""

    def __init__(self) -> None:
        super().__init__(-1, None, OrderedDict(), [])
        self._collect = True
        self.is_fallback = True

    def _bind_first_entity(self, name: str, space: TransformSpace) -> None:
        if name not in self._entity_map:
            super()._bind_first_entity(name, space)

    def fallback_split(self, name: str, constraints: list[int]) -> None:
        """Choose the largest divisors within ``constraints`` (``-1``: none), innermost first.

        Parameters
        ----------
        name : str
            A split knob already defined.
        constraints : list of int
            Maximum size per output axis.
        """
        space = self.space_map.get(name)
        if not isinstance(space, SplitSpace) or len(constraints) != space.num_output:
            raise SpaceError(f"fallback_split: {name!r} is not a split knob with {len(constraints)} outputs")
        limits = [1e10 if x == -1 else x for x in constraints]
        size = list(self._entity_map[name].size)
        now = space.product
        for i in reversed(range(space.num_output)):
            fitting = [f for f in get_factors(now) if f <= limits[i]]
            if not fitting:
                raise SpaceError(f"Cannot find feasible fallback split entity for node: {name}")
            size[i] = fitting[-1]
            now //= fitting[-1]
        self._entity_map[name] = SplitEntity(size)

    def fallback_with_reference_log(self, ref_log: Iterable[tuple[HasConfig, object]]) -> None:
        """Mimic the record whose split products share the most divisors with this space's.

        Parameters
        ----------
        ref_log : iterable of (MeasureInput, MeasureResult)
        """
        knob_names = [k for k, s in self.space_map.items() if isinstance(s, SplitSpace)]
        factor_sets = [set(get_factors(self.space_map[k].product)) for k in knob_names]
        best_cfg, best_score = None, 0.0
        for inp, _ in ref_log:
            score = 0.0
            for name, own in zip(knob_names, factor_sets, strict=True):
                ref = set(get_factors(abs(math.prod(inp.config[name].size))))
                score += len(own & ref) / len(own)
            if score > best_score:
                best_cfg, best_score = inp.config, score
        if best_cfg is None:
            return
        for name in knob_names:
            self.fallback_split(name, [-1] + list(best_cfg[name].size[1:]))
        for name, space in self.space_map.items():
            if not isinstance(space, SplitSpace):
                self._entity_map[name] = best_cfg[name]

    def __setitem__(self, name: str, entity: Entity) -> None:
        self._entity_map[name] = entity

    def __repr__(self) -> str:
        return f"{self._entity_text()},{self.code_hash}"
