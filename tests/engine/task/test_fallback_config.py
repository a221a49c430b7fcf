"""The fallback config: first values while tracing, split factors that fit, the most similar
logged record."""

from __future__ import annotations

import math
from collections import OrderedDict

import pytest

from tunecli.engine.task.fallback_config import FallbackConfigEntity
from tunecli.engine.task.space import ConfigEntity
from tunecli.engine.task.space_entities import OtherOptionEntity, SplitEntity
from tunecli.errors import SpaceError


def test_fallback_split() -> None:
    cfg = FallbackConfigEntity()
    cfg.define_split("tile_n", 128, num_outputs=3)
    cfg.fallback_split("tile_n", [-1, 8, 4])
    assert cfg["tile_n"].size == [4, 8, 4]
    assert str(cfg) == "[('tile_n', [4, 8, 4])],None"
    assert cfg.space_map["tile_n"][0].size == [-1, 1, 1]  # the space itself is untouched
    cfg.define_split("tile_m", 49, num_outputs=3)
    cfg.fallback_split("tile_m", [-1, 8, 4])
    assert cfg["tile_m"].size == [7, 7, 1]
    with pytest.raises(SpaceError, match="Cannot find feasible fallback split entity for node: tile_m"):
        cfg.fallback_split("tile_m", [-1, 1, 0])


def test_fallback_keeps_entities_set_before_define() -> None:
    cfg = FallbackConfigEntity()
    cfg["tile"] = SplitEntity([-1, 4])
    cfg.define_split("tile", 16, num_outputs=2)
    assert cfg["tile"].size == [-1, 4]
    assert cfg.is_fallback


def test_fallback_with_reference_log_copies_the_most_similar_record() -> None:
    def record(y: list[int], knob: int) -> tuple:
        entity = ConfigEntity(0, None, OrderedDict(tile=SplitEntity(y), unroll=OtherOptionEntity(knob)), [])
        return (type("Inp", (), {"config": entity})(), None)

    cfg = FallbackConfigEntity()
    cfg.define_split("tile", 64, num_outputs=3)
    cfg.define_knob("unroll", [0, 1])
    ref = [record([9, 1, 3], 0), record([4, 4, 4], 1), record([3, 5, 1], 0)]
    cfg.fallback_with_reference_log(ref)
    assert cfg["tile"].size == [4, 4, 4]
    assert cfg["unroll"].val == 1
    assert math.prod(cfg["tile"].size) == 64
