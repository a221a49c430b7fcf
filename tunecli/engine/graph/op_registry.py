"""The operator registry: one :class:`Op` record per graph operator, found by name.

An :class:`Op` carries everything the graph layers need to know about an operator: its attribute
record (a frozen dataclass, one per operator family), its type relation (shape and dtype
inference), its numpy reference (what the interpreter runs), its fusion pattern kind
(:class:`OpPattern`, TVM's ``TOpPattern``) and, for tunable operators, the operator key of its
strategy in ``ops.registry.STRATEGIES``.  ``OPS.get("nn.conv2d")`` is TVM's
``relay.op.get("nn.conv2d")``.  Higher layers attach more per-operator attributes (a compute or
lowering hook) with ``OPS.set_attr(name, key, value)``, as TVM's ``register_op_attr``.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterator, Sequence
from dataclasses import MISSING, dataclass, fields
from typing import Any, TypeVar

from tunecli.engine import te
from tunecli.errors import GraphError

from .types import TensorType, TupleType, Type, Value

_T = TypeVar("_T")


class OpPattern(enum.IntEnum):
    """How an operator may fuse with its neighbours (TVM's ``relay.op.OpPattern``, same values)."""

    ELEMWISE = 0  # out[i] = f(in[i]), same shape
    BROADCAST = 1  # out[i] reads in[broadcast(i)]
    INJECTIVE = 2  # each output element reads a function of its index (reshape, transpose)
    COMM_REDUCE = 3  # reduction over axes (sum, max, softmax's reductions)
    OUT_ELEMWISE_FUSABLE = 4  # an anchor (conv2d, dense) whose output can take elementwise consumers
    TUPLE = 7  # builds or reads a tuple
    OPAQUE = 8  # never fused


class Attrs:
    """Base of the attribute records (frozen dataclasses): TVM's ``Attrs`` reading methods."""

    def keys(self) -> list[str]:
        """Attribute names, in declaration order."""
        return [f.name for f in fields(self)]  # type: ignore[arg-type]

    def __getitem__(self, key: str) -> Any:  # a field of any record, as getattr: its type depends on key
        if key not in self.keys():
            raise KeyError(f"{type(self).__name__} has no attribute {key!r}; it has {self.keys()}")
        return getattr(self, key)

    def get_int_tuple(self, key: str) -> tuple[int, ...]:
        """Attribute ``key`` as a tuple of ints."""
        return tuple(int(v) for v in self[key])

    def get_int(self, key: str) -> int:
        """Attribute ``key`` as an int."""
        return int(self[key])

    def get_str(self, key: str) -> str:
        """Attribute ``key`` as a str."""
        return str(self[key])

    def non_default(self) -> dict[str, object]:
        """The attributes whose value differs from the record's default (what the printer shows)."""
        out = {}
        for f in fields(self):  # type: ignore[arg-type]
            value = getattr(self, f.name)
            default = f.default if f.default is not MISSING else MISSING
            if default is MISSING or value != default:
                out[f.name] = value
        return out


@dataclass(frozen=True)
class NoAttrs(Attrs):
    """The attribute record of operators without attributes."""


@dataclass(frozen=True)
class Solved:
    """A type relation's answer that also completes argument types (e.g. a weight's shape).

    Attributes
    ----------
    output : Type
        The call's type.
    args : tuple of Type
        The type of every argument, the unknown ones now known.
    """

    output: Type
    args: tuple[Type, ...]


#: ``relation(op_name, arg_types, attrs) -> Type | Solved``; ``arg_types`` entries are None where an
#: argument's type is not yet known (a Var without annotation).  ``attrs`` is typed Any: each operator's
#: relation takes its own :class:`Attrs` subclass, which a parameter typed ``Attrs`` would not admit.
TypeRelation = Callable[[str, Sequence["Type | None"], Any], "Type | Solved"]


@dataclass(frozen=True, eq=False)
class Op:
    """One graph operator (TVM's ``tvm.ir.Op``), compared by identity.

    Attributes
    ----------
    name : str
        ``"nn.conv2d"``, ``"add"``...
    arg_names : tuple of str
        Names of the inputs, in call order (``("data", "weight")``).
    attrs_type : type
        The frozen :class:`Attrs` dataclass of its calls.
    relation : callable
        ``relation(op_name, arg_types, attrs) -> Type | Solved``; raises GraphError naming the op.
    reference : callable
        ``reference(attrs, *arrays) -> array or tuple of arrays`` (numpy).
    pattern : OpPattern
        Fusion pattern kind.
    strategy_op : str or None
        Operator key of its implementations in ``ops.registry.STRATEGIES`` (tunable ops only).
    description : str
    """

    name: str
    arg_names: tuple[str, ...]
    attrs_type: type[Attrs]
    relation: TypeRelation
    reference: Callable[..., Value]
    pattern: OpPattern
    strategy_op: str | None = None
    description: str = ""

    @property
    def num_inputs(self) -> int:
        """Number of inputs."""
        return len(self.arg_names)

    def get_attr(self, key: str) -> object:
        """TVM's op attribute lookup: ``"TOpPattern"`` gives the pattern kind as an int; other keys
        are those attached with ``OPS.set_attr`` (GraphError when there is none)."""
        if key == "TOpPattern":
            return int(self.pattern)
        return OPS.get_attr(self.name, key)

    def __repr__(self) -> str:
        return f"Op({self.name})"


class OpRegistry:
    """Operators by name; each name registered once."""

    def __init__(self) -> None:
        self._ops: dict[str, Op] = {}
        self._attrs: dict[str, dict[str, object]] = {}  # key -> {op name -> value}

    def register(self, op: Op) -> Op:
        """Add ``op``; returns it."""
        if op.name in self._ops:
            raise GraphError(f"operator {op.name!r} is registered twice")
        self._ops[op.name] = op
        return op

    def get(self, name: str) -> Op:
        """The operator ``name`` (GraphError listing the known ones)."""
        try:
            return self._ops[name]
        except KeyError:
            raise GraphError(f"unknown operator {name!r}; known: {', '.join(sorted(self._ops))}") from None

    def __contains__(self, name: object) -> bool:
        return name in self._ops

    def __iter__(self) -> Iterator[Op]:
        return iter(self._ops.values())

    def names(self) -> list[str]:
        """Registered operator names."""
        return sorted(self._ops)

    def set_attr(self, op_name: str, key: str, value: object) -> None:
        """Attach attribute ``key`` (e.g. a layer's compute or strategy hook) to operator ``op_name``,
        as TVM's ``register_op_attr``; an operator takes each key once."""
        self.get(op_name)
        table = self._attrs.setdefault(key, {})
        if op_name in table:
            raise GraphError(f"operator {op_name}: attribute {key!r} is set twice")
        table[op_name] = value

    def register_attr(self, key: str, *op_names: str) -> Callable[[_T], _T]:
        """Decorator form of :meth:`set_attr`: the decorated function becomes attribute ``key`` of
        each operator of ``op_names``."""

        def wrap(value: _T) -> _T:
            for name in op_names:
                self.set_attr(name, key, value)
            return value

        return wrap

    def get_attr(self, op_name: str, key: str) -> object:
        """Attribute ``key`` of operator ``op_name`` (GraphError naming the operators that have it)."""
        table = self._attrs.get(key, {})
        if op_name not in table:
            have = ", ".join(sorted(table)) or "none"
            raise GraphError(f"operator {op_name} has no attribute {key!r} (operators with it: {have})")
        return table[op_name]

    def has_attr(self, op_name: str, key: str) -> bool:
        """Whether operator ``op_name`` has attribute ``key``."""
        return op_name in self._attrs.get(key, {})


#: Every graph operator.
OPS = OpRegistry()

#: The operator attribute holding an operator's te definition (TVM's name): a :data:`Compute`.
COMPUTE_ATTR = "FTVMCompute"
#: ``compute(attrs, inputs, out_type) -> te.Tensor``: the te stages of one call of an operator
#: (``attrs`` typed Any for the reason given at :data:`TypeRelation`).
Compute = Callable[[Any, Sequence[te.Tensor], TensorType], te.Tensor]


def tensor_arg(op_name: str, arg_types: Sequence[Type | None], index: int, what: str) -> TensorType:
    """The known tensor type of argument ``index`` (GraphError naming the op when unknown or a tuple)."""
    t = arg_types[index]
    if t is None:
        raise GraphError(
            f"{op_name}: the type of argument {index} ({what}) is unknown; give the variable "
            f"a shape or let an earlier operator determine it"
        )
    if not isinstance(t, TensorType):
        raise GraphError(f"{op_name}: argument {index} ({what}) must be a tensor, got {t}")
    return t


def tuple_arg(op_name: str, arg_types: Sequence[Type | None], index: int, what: str) -> TupleType:
    """The known tuple type of argument ``index`` (GraphError naming the op otherwise)."""
    t = arg_types[index]
    if not isinstance(t, TupleType):
        raise GraphError(f"{op_name}: argument {index} ({what}) must be a tuple, got {t}")
    return t


def expect(condition: bool, op_name: str, message: str) -> None:
    """Raise GraphError ``"<op_name>: <message>"`` unless ``condition``."""
    if not condition:
        raise GraphError(f"{op_name}: {message}")
