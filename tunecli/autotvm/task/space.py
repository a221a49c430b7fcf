"""tunecli.autotvm.task.space: config spaces and their knobs (TVM's ``autotvm.task.space``), and the
``InstantiationError`` a template raises for a config it refuses."""

from tunecli.engine.task.annotate_space import AnnotateEntity, AnnotateSpace
from tunecli.engine.task.fallback_config import FallbackConfigEntity
from tunecli.engine.task.space import ConfigEntity, ConfigSpace
from tunecli.engine.task.space_entities import (
    Axis,
    OtherOptionEntity,
    OtherOptionSpace,
    ReorderEntity,
    ReorderSpace,
    SplitEntity,
    SplitSpace,
    TransformSpace,
    VirtualAxis,
    get_factors,
    get_pow2s,
)
from tunecli.engine.task.space_index import SpaceIndexError
from tunecli.errors import InstantiationError

__all__ = [
    "AnnotateEntity", "AnnotateSpace", "Axis", "ConfigEntity", "ConfigSpace", "FallbackConfigEntity",
    "InstantiationError", "OtherOptionEntity", "OtherOptionSpace", "ReorderEntity", "ReorderSpace",
    "SpaceIndexError", "SplitEntity", "SplitSpace", "TransformSpace", "VirtualAxis", "get_factors",
    "get_pow2s",
]
