"""The knobs of a config space: one ``*Space`` (all values) and one ``*Entity`` (one value) per kind.

TVM's enumeration orders are part of the log format (a config is stored as an index), so every
space here enumerates exactly as ``tvm.autotvm.task.space`` does:

* ``SplitSpace``: depth-first over the candidate factors, the *innermost* factor slowest,
  ``size[0] == -1``; ``verbose`` uses CPython's iteration order of ``set(divisors) | set(pow2s)``.
  Axes longer than 32-bit indexing and knobs of more than ``MAX_KNOB_ENTITIES`` values (of any
  kind) are refused (a ``SpaceError``) before anything slow is done.
* ``ReorderSpace``: lexicographic permutations.
* ``AnnotateSpace`` (:mod:`tunecli.engine.task.annotate_space`): Cartesian product with axis 0
  slowest, at most one ``vec``.
* ``OtherOptionSpace``: the candidate list in order.
"""

from __future__ import annotations

import itertools
import math
from collections import namedtuple
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Generic, TypeAlias, TypedDict, TypeVar, Unpack

from tunecli.engine.task.factors import get_factors, get_pow2s, prime_factors
from tunecli.errors import SpaceError

if TYPE_CHECKING:
    from tunecli.engine.schedule import Schedule
    from tunecli.engine.te import IterVar, Operation, Tensor

Axis = namedtuple("Axis", ["space", "index"])

#: An axis a knob is defined over: a length, an IterVar, a virtual axis or an axis a knob returned.
KnobAxis: TypeAlias = "int | IterVar | VirtualAxis | Axis"
#: What ``sch[...]`` takes to name a stage.
StageKey: TypeAlias = "Operation | Tensor"
#: A value a ``define_knob`` knob may take: any JSON value (tuples read back from a log as lists).
KnobValue: TypeAlias = "None | bool | int | float | str | list[KnobValue] | tuple[KnobValue, ...]"
#: The entity kind of a knob (``SplitEntity`` for a ``SplitSpace``, ...).
EntityT = TypeVar("EntityT")


class SplitOptions(TypedDict, total=False):
    """The keyword options of ``define_split``."""

    num_outputs: int
    max_factor: int
    filter: Callable[[SplitEntity], bool]
    no_tail: bool
    candidate: Sequence[Sequence[int]]


class ReorderOptions(TypedDict, total=False):
    """The keyword options of ``define_reorder``."""

    interval: tuple[int, int]
    candidate: Sequence[Sequence[Axis | VirtualAxis]]

#: Longest axis a split knob takes: kernels index buffers with 32-bit integers.
MAX_SPLIT_EXTENT = 2**31 - 1
#: Most values one knob may enumerate.
MAX_KNOB_ENTITIES = 1_000_000

ANN_TO_NUMBER = {
    "none": 0, "vec": 1, "unroll": 2, "blockIdx.x": 3, "blockIdx.y": 4, "blockIdx.z": 5,
    "threadIdx.x": 6, "threadIdx.y": 7, "threadIdx.z": 8, "vthread": 9, "fuse": 10,
}


def const_int(value: object, where: str) -> int:
    """Return ``value`` (an int, or an int-valued expression with ``.value``) as a Python int."""
    if isinstance(value, bool):
        raise SpaceError(f"{where}: expected an integer, got {value!r}")
    if isinstance(value, int):
        return value
    inner = getattr(value, "value", None)
    if isinstance(inner, int) and not isinstance(inner, bool):
        return inner
    try:
        return int(value)
    except (TypeError, ValueError):
        raise SpaceError(f"{where}: expected a constant integer, got {value!r}") from None


class TransformSpace(Generic[EntityT]):
    """Base class of a knob: an ordered list of entities."""

    def __init__(self) -> None:
        self.ins: list[VirtualAxis | Axis] = []
        self.num_output = 0
        self.entities: list[EntityT] = []

    def __len__(self) -> int:
        return len(self.entities)

    def __getitem__(self, index: int) -> EntityT:
        return self.entities[index]


class VirtualAxis(TransformSpace[None]):
    """An axis placeholder of known length used while defining a space.

    Parameters
    ----------
    var : int, VirtualAxis or IterVar-like
        An int gives the length; an IterVar (anything with ``.dom.extent`` and ``.var.name``)
        gives its extent and name.
    name : str, optional
        Defaults to ``axis_<n>`` from a global counter.
    """

    name_ct = 0

    def __init__(self, var: int | VirtualAxis | IterVar, name: str | None = None):
        super().__init__()
        self.num_output = 1
        if name is None:
            name = f"axis_{VirtualAxis.name_ct}"
            VirtualAxis.name_ct += 1
        self.name = name
        if isinstance(var, int) and not isinstance(var, bool):
            self.length = var
        elif isinstance(var, VirtualAxis):
            self.length = var.length
        elif hasattr(var, "dom") and hasattr(var, "var"):
            self.name = str(var.var.name)
            dom = var.dom
            self.length = -1 if dom is None else const_int(dom.extent, f"axis {self.name}")
        else:
            raise SpaceError(f"cfg.axis: invalid type of axis: {type(var).__name__}")

    def __repr__(self) -> str:
        return f"vaxis({self.name})"


class SplitEntity:
    """One way to split an axis: ``size`` lists the extent of every output axis (``size[0] == -1``)."""

    def __init__(self, size: Sequence[int]):
        self.size = list(size)

    def apply(self, sch: Schedule, op: StageKey, axis: IterVar) -> list[IterVar]:
        """Split ``axis`` of stage ``sch[op]`` into ``len(size)`` axes, outermost first.

        Parameters
        ----------
        sch : Schedule
        op : Operation or Tensor
        axis : IterVar

        Returns
        -------
        list of IterVar
        """
        ret = []
        for i in range(1, len(self.size)):
            outer, inner = sch[op].split(axis, factor=math.prod(self.size[i:]))
            ret.append(outer)
            axis = inner
        return ret + [axis]

    def __repr__(self) -> str:
        return str(self.size)


class SplitSpace(TransformSpace[SplitEntity]):
    """All splits of one axis under a policy (``factors``, ``power2``, ``verbose``, ``candidate``)."""

    def __init__(self, axes: Sequence[VirtualAxis], policy: str, **kwargs: Unpack[SplitOptions]):
        super().__init__()
        self.policy = policy
        self.product = axes[0].length
        self.num_output = kwargs.get("num_outputs", 0)
        if not isinstance(self.num_output, int) or self.num_output <= 0:
            raise SpaceError(f"define_split: num_outputs must be a positive int, got {self.num_output!r}")
        fil = kwargs.get("filter", lambda x: True)
        if policy == "candidate":
            for size in required_option(kwargs, "candidate", "define_split", policy):
                if len(size) != self.num_output:
                    raise SpaceError(f"define_split: candidate {size} does not have {self.num_output} sizes")
                self.entities.append(SplitEntity(size))
        else:
            if self.product < 1:
                raise SpaceError(f"define_split: axis length {self.product} is not positive")
            if self.product > MAX_SPLIT_EXTENT:
                raise SpaceError(f"define_split: axis length {self.product} is beyond 32-bit indexing "
                                 f"(at most {MAX_SPLIT_EXTENT})")
            max_factor = kwargs.get("max_factor", 1 << 31)
            if policy == "verbose":
                # CPython's set order, exactly as TVM computes it: log indices depend on it.
                union = list(set(get_factors(self.product)) | set(get_pow2s(self.product)))
                factors = [x for x in union if x <= max_factor]
            elif policy == "factors":
                factors = [x for x in get_factors(self.product) if x <= max_factor]
            elif policy == "power2":
                factors = [x for x in get_pow2s(self.product) if x <= max_factor]
            else:
                raise SpaceError(f"define_split: invalid policy: {policy}")
            self.factors = factors
            no_tail = kwargs.get("no_tail", policy == "factors")
            if self.num_output == 1:
                self.entities = [SplitEntity([-1])]
            else:
                self._generate(no_tail)
        self.entities = list(filter(fil, self.entities))

    def _too_many(self) -> SpaceError:
        return SpaceError(f"define_split: splitting an axis of length {self.product} into {self.num_output} "
                          f"parts gives more than {MAX_KNOB_ENTITIES} candidates; use fewer num_outputs, "
                          "a max_factor or policy='power2'")

    def _generate(self, no_tail: bool) -> None:
        """Depth-first over ``factors``, level 0 the innermost factor (slowest varying), visiting only
        prefixes that can still complete: their product divides the length (``no_tail``) or does
        not exceed it."""
        depth = self.num_output - 1
        if no_tail:  # the splits are at most the ordered factorizations into num_output parts
            bound = math.prod(math.comb(e + depth, depth) for _, e in prime_factors(self.product))
            if bound > MAX_KNOB_ENTITIES and len(self.factors) ** depth > MAX_KNOB_ENTITIES:
                raise self._too_many()
        fitting: dict[int, list[int]] = {}

        def options(rest: int) -> list[int]:
            """The factors that keep the prefix valid when ``rest`` is length // prefix product."""
            if rest not in fitting:
                fitting[rest] = [f for f in self.factors if (rest % f == 0 if no_tail else f <= rest)]
            return fitting[rest]

        stack = [0] * depth

        def visit(level: int, rest: int) -> None:
            for factor in options(rest):
                stack[level] = factor
                if level + 1 < depth:
                    visit(level + 1, rest // factor)
                    continue
                self.entities.append(SplitEntity([-1] + stack[::-1]))
                if len(self.entities) > MAX_KNOB_ENTITIES:
                    raise self._too_many()

        visit(0, self.product)

    def __repr__(self) -> str:
        return (f"Split(policy={self.policy}, product={self.product}, "
                f"num_outputs={self.num_output}) len={len(self)}")


class ReorderEntity:
    """One permutation of a list of axes."""

    def __init__(self, perm: Sequence[int]):
        self.perm = list(perm)

    def apply(self, sch: Schedule, op: StageKey, axes: Sequence[IterVar]) -> list[IterVar]:
        """Reorder ``axes`` of stage ``sch[op]`` by this permutation and return the new order.

        Parameters
        ----------
        sch : Schedule
        op : Operation or Tensor
        axes : list of IterVar

        Returns
        -------
        list of IterVar
        """
        new_order = [axes[i] for i in self.perm if i < len(axes)]
        sch[op].reorder(*new_order)
        return new_order

    def __repr__(self) -> str:
        return str(self.perm)


class ReorderSpace(TransformSpace[ReorderEntity]):
    """Permutations of axes under a policy (``identity``, ``all``, ``interval_all``, ``candidate``)."""

    def __init__(self, axes: Sequence[VirtualAxis | Axis], policy: str, **kwargs: Unpack[ReorderOptions]):
        super().__init__()
        self.ins = list(axes)
        self.policy = policy
        n = self.num_output = len(axes)
        if policy == "identity":
            self.entities = [ReorderEntity(range(n))]
        elif policy == "all":
            check_count("define_reorder", f"all orders of {n} axes", math.factorial(n))
            self.entities = [ReorderEntity(p) for p in itertools.permutations(range(n))]
        elif policy == "interval_all":
            begin, end = required_option(kwargs, "interval", "define_reorder", policy)
            check_count("define_reorder", f"all orders of {end - begin} axes",
                         math.factorial(max(0, end - begin)))
            prefix, suffix = tuple(range(begin)), tuple(range(end, n))
            self.entities = [ReorderEntity(prefix + p + suffix)
                             for p in itertools.permutations(range(begin, end))]
        elif policy == "candidate":
            for cand in required_option(kwargs, "candidate", "define_reorder", policy):
                try:
                    self.entities.append(ReorderEntity([_index_of(axes, x) for x in cand]))
                except ValueError:
                    raise SpaceError("define_reorder: a candidate names an axis not in axes") from None
        else:
            raise SpaceError(f"define_reorder: invalid policy: {policy}")

    def __repr__(self) -> str:
        return f"Reorder(policy={self.policy}) len={len(self)}"


def required_option(options: Mapping[str, Any], name: str, primitive: str, policy: str) -> Any:
    """The keyword option ``name`` a policy needs; SpaceError naming it when the template left it out."""
    if name not in options:
        raise SpaceError(f"{primitive}: policy {policy!r} needs the keyword argument {name}=")
    return options[name]


def check_count(primitive: str, what: str, count: int) -> None:
    """Refuse a knob of more than :data:`MAX_KNOB_ENTITIES` values before enumerating it."""
    if count > MAX_KNOB_ENTITIES:
        raise SpaceError(f"{primitive}: {what} give {count} values, more than a knob may have "
                         f"({MAX_KNOB_ENTITIES})")


def _index_of(axes: Sequence[object], axis: object) -> int:
    """Position of ``axis`` in ``axes`` by identity (IterVars may overload ``==``)."""
    for i, candidate in enumerate(axes):
        if candidate is axis:
            return i
    raise ValueError(axis)


class OtherOptionEntity:
    """One value of a ``define_knob`` knob (``.val``)."""

    def __init__(self, val: KnobValue):  # the value the template offered (define_knob's candidate)
        self.val = val

    def __repr__(self) -> str:
        return str(self.val)


class OtherOptionSpace(TransformSpace[OtherOptionEntity]):
    """The candidate values of a ``define_knob`` knob, in list order."""

    def __init__(self, axes: Sequence[VirtualAxis | Axis], policy: str | None, *,
                 candidate: Sequence[KnobValue]):
        super().__init__()
        self.entities = [OtherOptionEntity(x) for x in candidate]

    def __repr__(self) -> str:
        return f"OtherOption({self.entities}) len={len(self)}"
