"""``GATuner`` draws its first generation when it is made (TVM's ``genes`` and ``visited``), at
most the space's size, only valid configs; history loaded afterwards replaces the genes it
already measured."""

from __future__ import annotations

from tunecli.autotvm.measure import MeasureErrorNo, MeasureInput, MeasureResult
from tunecli.autotvm.tuner import GATuner
from tunecli.testing.autotvm import get_sample_task


def valid(space: object) -> set[int]:
    return {i for i in range(space.range_length) if space.is_index_valid(i)}


def test_the_first_generation_exists_once_the_tuner_is_made() -> None:
    task, _ = get_sample_task(64)  # 7 x 7 = 49 configs
    tuner = GATuner(task, pop_size=20, seed=3)
    assert len(tuner.genes) == len(tuner.visited) == tuner.pop_size == 20
    assert {task.config_space.knob2point(g) for g in tuner.genes} == tuner.visited


def test_a_population_larger_than_the_space_is_the_whole_space() -> None:
    task, _ = get_sample_task(64)
    tuner = GATuner(task, pop_size=80, elite_num=2, seed=1)
    assert tuner.pop_size == len(tuner.genes) == len(tuner.visited) == len(task.config_space)


def test_genes_come_from_the_filtered_space() -> None:
    task, _ = get_sample_task(64)
    task.config_space.multi_filter(filter=lambda e: e["tile_x"].size[1] * e["tile_y"].size[1] >= 16)
    tuner = GATuner(task, pop_size=10, seed=5)
    assert tuner.visited <= valid(task.config_space) and len(tuner.visited) == 10


def test_history_replaces_the_genes_it_measured() -> None:
    task, target = get_sample_task(64)
    tuner = GATuner(task, pop_size=8, seed=11)
    measured = sorted(tuner.visited)[:3]
    history = [(MeasureInput(target, task, task.config_space.get(i)),
                MeasureResult((1e-3,), MeasureErrorNo.NO_ERROR, 0.0, 0.0)) for i in measured]
    tuner.load_history(history)
    proposed = [c.index for c in tuner.next_batch(8)]
    assert len(proposed) == 8 and not set(proposed) & set(measured)
