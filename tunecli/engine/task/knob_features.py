"""Knob feature vectors: a config as numbers, one piece per knob (TVM's "knob" features).

Split sizes (with the leading -1), permutations, a one-hot vector of length 11 per annotation
and knob values, in definition order.  ``knob_features`` computes them for many indices at once
from per-knob tables.
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from tunecli.engine.task.annotate_space import AnnotateEntity
from tunecli.engine.task.space_entities import ANN_TO_NUMBER, OtherOptionEntity, ReorderEntity, SplitEntity

if TYPE_CHECKING:
    from tunecli.engine.task.space import ConfigSpace, Entity


def _feature_value(val: object) -> float:
    """A knob value as a number: numbers and bools as themselves, anything else by a stable hash."""
    if isinstance(val, (bool, int, float, np.integer, np.floating)):
        return float(val)
    return float(zlib.crc32(repr(val).encode()) % 1000)


def entity_features(v: Entity) -> list[float]:
    """Return the knob features of one entity (the pieces of ``get_flatten_feature``).

    Parameters
    ----------
    v : SplitEntity, ReorderEntity, AnnotateEntity or OtherOptionEntity

    Returns
    -------
    list of float
    """
    if isinstance(v, SplitEntity):
        return [float(x) for x in v.size]
    if isinstance(v, ReorderEntity):
        return [float(x) for x in v.perm]
    if isinstance(v, AnnotateEntity):
        fea: list[float] = []
        for ann in v.anns:
            if isinstance(ann, str):
                one_hot = [0.0] * len(ANN_TO_NUMBER)
                one_hot[ANN_TO_NUMBER[ann]] = 1.0
                fea.extend(one_hot)
            else:
                fea.append(float(ann))
        return fea
    if isinstance(v, OtherOptionEntity):
        return [_feature_value(v.val)]
    return []


def knob_features(space: ConfigSpace, indices: Sequence[int]) -> np.ndarray:
    """Return the knob features of many config indices (one row each).

    Parameters
    ----------
    space : ConfigSpace
    indices : sequence of int

    Returns
    -------
    numpy.ndarray of float32, shape (len(indices), n_features)
    """
    idx = np.asarray(indices, dtype=np.int64).reshape(-1)
    columns = []
    stride = 1
    for knob in space.space_map.values():
        table = np.array([entity_features(e) for e in knob.entities], dtype=np.float32)
        if table.ndim == 2 and table.shape[1]:
            columns.append(table[(idx // stride) % len(knob)])
        stride *= len(knob)
    if not columns:
        return np.zeros((len(idx), 0), dtype=np.float32)
    return np.concatenate(columns, axis=1)
