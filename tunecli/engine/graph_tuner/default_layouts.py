"""Configs of a convolution in its default layouts: candidates the graph tuner measures itself so
that its choices include one without layout transforms.

A tuning log holds, for each convolution, the configs its tuner happened to try.  The fast ones
come in whatever channel blocks the search reached (``NCHW96c``, ``NCHW480c``, ``NCHW10c``...),
each block pair with one or two configs; the records whose blocks a neighbouring convolution
shares are then rarely well tuned, and the graph tuner can only trade kernel time against
transforms among those records.  The *default* layouts are those of the template's fallback
config (``ops.x86.conv2d_nchwc.network_channel_block``: the largest block dividing the channels
that fits one vector register, or two vectors on targets with 32 registers), the ones an untuned
build runs with: they agree from one convolution to the next wherever the channel counts divide
by the block.

``default_layout_configs`` gives, for one task, the fallback config and the other knobs (register
tile, unrolling) of its fastest records moved to the default blocks; the graph tuner measures
them and keeps the fastest as a candidate (``BaseGraphTuner.benchmark_default_layouts``).
"""

from __future__ import annotations

from collections.abc import Sequence

from tunecli.engine.log.layout_choice import LAYOUT_KNOBS, entity_key
from tunecli.engine.task.fallback_config import FallbackConfigEntity
from tunecli.engine.task.space import ConfigEntity, ConfigSpace
from tunecli.engine.task.task import Task


def default_layout_configs(task: Task, configs: Sequence[ConfigEntity]) -> list[ConfigEntity]:
    """The fallback config of ``task`` and each of ``configs`` with its layout knobs set to the
    fallback's, without repeats.

    Parameters
    ----------
    task : Task
        A ``conv2d_NCHWc.x86`` or ``depthwise_conv2d_NCHWc.x86`` task.
    configs : sequence of ConfigEntity
        Configs of ``task`` (its fastest records').

    Returns
    -------
    list of ConfigEntity
        Entities of ``task.config_space`` (with their indices, as records need).
    """
    fallback = FallbackConfigEntity()
    task.instantiate(fallback)
    space = task.config_space
    default = _knob_positions(space, fallback)
    names = list(space.space_map)
    points = [space.knob2point(default)]
    for cfg in configs:
        knobs = _knob_positions(space, cfg)
        for name in LAYOUT_KNOBS:
            knobs[names.index(name)] = default[names.index(name)]
        points.append(space.knob2point(knobs))
    return [space.get(p) for p in dict.fromkeys(points) if space.is_index_valid(p)]


def _knob_positions(space: ConfigSpace, cfg: ConfigEntity) -> list[int]:
    """The position of each of ``cfg``'s entities in its knob of ``space``, in knob order (see
    ``_position`` for an entity the knob lacks)."""
    return [_position([entity_key(e) for e in knob.entities], entity_key(cfg[name]))
            for name, knob in space.space_map.items()]


def _position(keys: list, key: object) -> int:
    """The position of ``key`` among a knob's entity ``keys``; for a value the knob does not
    offer (a fallback config may: TVM's 1x1 fallback sets ``tile_oh`` to a divisor of the output
    height, the knob offers 1 and 2), the position of the nearest number, else the first."""
    if key in keys:
        return keys.index(key)
    numbers = [k for k in keys if isinstance(k, int | float)]
    if isinstance(key, int | float) and len(numbers) == len(keys):
        return min(range(len(keys)), key=lambda i: (abs(keys[i] - key), i))
    return 0
