"""The flat-index view of a config space: a config is an int decoded in mixed radix.

The *first* knob varies fastest (``point2knob``, ``knob2point``), exactly as TVM, so indices in
TVM logs decode to the same entities.  ``multi_filter`` marks indices invalid without changing
``dims`` or ``range_length``; the methods here step, sample and walk over valid indices only.
"""

from __future__ import annotations

import math
from collections import OrderedDict
from collections.abc import Callable, Collection
from typing import TYPE_CHECKING

import numpy as np

from tunecli.errors import SpaceError

if TYPE_CHECKING:
    from tunecli.engine.task.space import EntityMap
    from tunecli.engine.task.space_entities import TransformSpace

_DEFAULT_RNG = np.random.default_rng()
_REJECTIONS_BEFORE_ENUMERATION = 64
_ENUMERABLE_RANGE = 1 << 22


class SpaceIndexError(SpaceError, IndexError):
    """An index outside the space, or one the multi-filter rejects (also an ``IndexError``)."""


class SpaceIndex:
    """Mixin over ``space_map`` (name -> knob) giving the index API tuners use."""

    space_map: OrderedDict[str, TransformSpace]
    _shared_filter: Callable[[EntityMap], bool] | None

    def clear_cache(self) -> None:
        """Forget cached dims, lengths and multi-filter results."""
        self._dims: list[int] | None = None
        self._length: int | None = None
        self._range_length: int | None = None
        self._filter_cache: np.ndarray | None = None

    @property
    def dims(self) -> list[int]:
        """Number of entities of every knob, in definition order."""
        if self._dims is None:
            self._dims = [len(x) for x in self.space_map.values()]
        return self._dims

    @property
    def range_length(self) -> int:
        """Number of indices (product of ``dims``; 1 for an empty space)."""
        if self._range_length is None:
            self._range_length = math.prod(self.dims)
        return self._range_length

    def __len__(self) -> int:
        if self._length is None:
            if self._shared_filter is None:
                self._length = self.range_length
            else:
                self._length = int(self._valid_mask().sum())
        return self._length

    def _valid_mask(self) -> np.ndarray:
        if self._filter_cache is None:
            self._filter_cache = np.fromiter(
                (bool(self._shared_filter(self._entities_of(i))) for i in range(self.range_length)),
                dtype=bool, count=self.range_length)
        return self._filter_cache

    def _check_index(self, index: int) -> None:
        if not 0 <= index < self.range_length:
            raise SpaceIndexError(f"Index out of range: size {self.range_length}, got index {index}")

    def is_index_valid(self, index: int) -> bool:
        """Return True when ``index`` passes the multi-filter (always, without one).

        Parameters
        ----------
        index : int

        Returns
        -------
        bool
        """
        self._check_index(index)
        return self._shared_filter is None or bool(self._valid_mask()[index])

    def subrange_length(self, start: int, end: int) -> int:
        """Return the number of valid indices in ``[start, end)``.

        Parameters
        ----------
        start, end : int

        Returns
        -------
        int
        """
        if not 0 <= start <= end <= self.range_length:
            raise SpaceIndexError(f"subrange [{start}, {end}) is not inside [0, {self.range_length}]")
        if self._shared_filter is None:
            return end - start
        return int(self._valid_mask()[start:end].sum())

    def get_rand_index(self, start: int | None = None, end: int | None = None,
                       to_exclude: Collection[int] | None = None,
                       rng: np.random.Generator | None = None) -> int:
        """Draw a uniformly random valid index in ``[start, end)`` that is not in ``to_exclude``.

        Parameters
        ----------
        start, end : int, optional
            Default to the whole space.
        to_exclude : collection of int, optional
        rng : numpy.random.Generator, optional

        Returns
        -------
        int
        """
        rng = rng or _DEFAULT_RNG
        start = start or 0
        end = end or self.range_length
        exclude = to_exclude if to_exclude is not None else ()
        for _ in range(_REJECTIONS_BEFORE_ENUMERATION):
            index = int(rng.integers(start, end))
            if self.is_index_valid(index) and index not in exclude:
                return index
        if end - start > _ENUMERABLE_RANGE:
            while True:
                index = int(rng.integers(start, end))
                if self.is_index_valid(index) and index not in exclude:
                    return index
        left = [i for i in range(start, end) if self.is_index_valid(i) and i not in exclude]
        if not left:
            raise SpaceError(f"get_rand_index: no valid index left in [{start}, {end})")
        return left[int(rng.integers(len(left)))]

    def get_next_index(self, index: int, n: int = 1, start: int | None = None,
                       end: int | None = None) -> int | None:
        """Return the ``n``-th valid index after ``index`` (before it when ``n < 0``), or None.

        Parameters
        ----------
        index : int
        n : int
        start, end : int, optional
            The window ``[start, end)``; leaving it gives None.

        Returns
        -------
        int or None
        """
        if n == 0:
            raise SpaceError("get_next_index: n must not be 0")
        start = start or 0
        end = end or self.range_length
        if self._shared_filter is None:
            index += n
            return index if start <= index < end else None
        step = 1 if n > 0 else -1
        for _ in range(abs(n)):
            index += step
            while start <= index < end and not self._valid_mask()[index]:
                index += step
            if not start <= index < end:
                return None
        return index

    def sample_ints(self, m: int, rng: np.random.Generator | None = None) -> np.ndarray:
        """Return ``m`` distinct random valid indices.

        Parameters
        ----------
        m : int
        rng : numpy.random.Generator, optional

        Returns
        -------
        numpy.ndarray of int64
        """
        if m > len(self):
            raise SpaceError(f"sample_ints: cannot draw {m} distinct configs from a space of {len(self)}")
        vals: dict[int, None] = {}
        while len(vals) < m:
            vals[self.get_rand_index(rng=rng, to_exclude=vals)] = None
        return np.fromiter(vals, dtype=np.int64, count=m)

    def random_walk(self, point: int, rng: np.random.Generator | None = None) -> int:
        """Return a valid neighbour of ``point`` that differs in at least one knob.

        Parameters
        ----------
        point : int
        rng : numpy.random.Generator, optional

        Returns
        -------
        int
        """
        rng = rng or _DEFAULT_RNG
        old = self.point2knob(point)
        if all(d <= 1 for d in self.dims):
            raise SpaceError("random_walk: the space has a single config")
        new = list(old)
        new_point = point
        while new == old or not self.is_index_valid(new_point):
            dim = int(rng.integers(len(old)))
            new[dim] = int(rng.integers(self.dims[dim]))
            new_point = self.knob2point(new)
        return new_point

    def random_walk_many(self, points: np.ndarray, rng: np.random.Generator | None = None) -> np.ndarray:
        """Take one ``random_walk`` step from every point at once (same distribution, vectorised).

        Parameters
        ----------
        points : numpy.ndarray of int
        rng : numpy.random.Generator, optional

        Returns
        -------
        numpy.ndarray of int64
        """
        rng = rng or _DEFAULT_RNG
        points = np.asarray(points, dtype=np.int64)
        dims = np.array(self.dims, dtype=np.int64)
        if self.range_length >= 1 << 62:
            return np.array([self.random_walk(int(p), rng=rng) for p in points], dtype=np.int64)
        if not (dims > 1).any():
            raise SpaceError("random_walk: the space has a single config")
        # A walk re-draws (knob, value) until the value changes: knob d ends up chosen with
        # probability proportional to (dims[d] - 1) / dims[d], then a different value uniformly.
        weights = np.where(dims > 1, (dims - 1) / dims, 0.0)
        strides = np.concatenate([[1], np.cumprod(dims[:-1])])
        d = rng.choice(len(dims), size=len(points), p=weights / weights.sum())
        old = (points // strides[d]) % dims[d]
        new = rng.integers(0, dims[d] - 1)
        new = new + (new >= old)
        out = points + (new - old) * strides[d]
        if self._shared_filter is not None:
            for i in np.flatnonzero(~self._valid_mask()[out]):
                out[i] = self.random_walk(int(points[i]), rng=rng)
        return out

    def point2knob(self, point: int) -> list[int]:
        """Decode an index into one entity position per knob (first knob fastest).

        Parameters
        ----------
        point : int

        Returns
        -------
        list of int
        """
        knob = []
        for dim in self.dims:
            knob.append(point % dim)
            point //= dim
        return knob

    def knob2point(self, knob: list[int]) -> int:
        """Encode entity positions (one per knob) into an index.

        Parameters
        ----------
        knob : list of int

        Returns
        -------
        int
        """
        point, stride = 0, 1
        for k, dim in zip(knob, self.dims, strict=True):
            point += int(k) * stride
            stride *= dim
        return point

    def _entities_of(self, index: int) -> EntityMap:
        entities: EntityMap = OrderedDict()
        t = index
        for name, space in self.space_map.items():
            entities[name] = space[t % len(space)]
            t //= len(space)
        return entities

