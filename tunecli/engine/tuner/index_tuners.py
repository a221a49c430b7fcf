"""Tuners that walk config indices without a model: grid order or uniformly at random.

``range_idx=(begin, end)`` (inclusive, as in TVM) restricts a tuner to a slice of the space,
so several tuners can split one space between them.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from tunecli.engine.tuner.tuner import Tuner
from tunecli.errors import TuneError

if TYPE_CHECKING:
    from tunecli.engine.task.space import ConfigEntity
    from tunecli.engine.task.task import Task


class IndexBaseTuner(Tuner):
    """Base of tuners over an index range.

    Parameters
    ----------
    task : Task
    range_idx : tuple of (int, int), optional
        Inclusive ``(begin, end)``; the whole space by default.
    seed : int, optional
    """

    def __init__(self, task: Task, range_idx: tuple[int, int] | None = None, seed: int | None = None):
        super().__init__(task, seed=seed)
        space = self.space
        if range_idx is None:
            range_idx = (0, space.range_length - 1)
        if not isinstance(range_idx, tuple) or len(range_idx) != 2:
            raise TuneError(f"{type(self).__name__}: range_idx must be a tuple (begin, end), "
                            f"got {range_idx!r}")
        self.begin_idx, self.end_idx = int(range_idx[0]), int(range_idx[1]) + 1
        self.range_length = self.end_idx - self.begin_idx
        if self.begin_idx < 0 or self.end_idx > space.range_length or self.range_length <= 0:
            raise TuneError(f"{type(self).__name__}: range_idx {range_idx} is not inside "
                            f"[0, {space.range_length - 1}]")
        self.visited_max = space.subrange_length(self.begin_idx, self.end_idx)
        self._n_visited_in_range = 0

    def mark_visited(self, indices: Iterable[int]) -> None:
        """Never propose these indices (see ``Tuner.mark_visited``)."""
        for index in indices:
            index = int(index)
            if index in self.visited or not 0 <= index < self.space.range_length:
                continue
            if self.space.is_index_valid(index):
                self.visited.add(index)
                if self.begin_idx <= index < self.end_idx:
                    self._n_visited_in_range += 1

    def has_next(self) -> bool:
        """Return True while an unvisited valid index is left in the range."""
        return self._n_visited_in_range < self.visited_max


class GridSearchTuner(IndexBaseTuner):
    """Propose valid indices in increasing order.

    Parameters
    ----------
    task : Task
    range_idx : tuple of (int, int), optional
    seed : int, optional
        Unused (grid order is deterministic); accepted like every tuner.
    """

    def __init__(self, task: Task, range_idx: tuple[int, int] | None = None, seed: int | None = None):
        super().__init__(task, range_idx, seed)
        self.index: int | None = self.begin_idx
        if not self.space.is_index_valid(self.index):
            self.index = self.space.get_next_index(self.index, start=self.begin_idx, end=self.end_idx)

    def next_batch(self, batch_size: int) -> list[ConfigEntity]:
        """Return the next ``batch_size`` unvisited indices in grid order."""
        ret = []
        while len(ret) < batch_size and self.has_next() and self.index is not None:
            if self.index not in self.visited:
                ret.append(self.space.get(self.index))
                self.mark_visited([self.index])
            self.index = self.space.get_next_index(self.index, start=self.begin_idx, end=self.end_idx)
        return ret


class RandomTuner(IndexBaseTuner):
    """Propose valid indices uniformly at random, without replacement.

    Parameters
    ----------
    task : Task
    range_idx : tuple of (int, int), optional
    seed : int, optional
    """

    def next_batch(self, batch_size: int) -> list[ConfigEntity]:
        """Return ``batch_size`` random unvisited indices."""
        ret = []
        while len(ret) < batch_size and self.has_next():
            index = self.space.get_rand_index(self.begin_idx, self.end_idx, to_exclude=self.visited,
                                              rng=self.rng)
            ret.append(self.space.get(index))
            self.mark_visited([index])
        return ret
