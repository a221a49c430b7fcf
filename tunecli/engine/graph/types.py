"""Types of graph values: a tensor (static shape and dtype) or a tuple of types."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypeAlias

import numpy as np

from tunecli.errors import GraphError


@dataclass(frozen=True)
class TensorType:
    """A tensor of static ``shape`` and ``dtype`` (TVM's ``relay.TensorType``).

    Attributes
    ----------
    shape : tuple of int
    dtype : str
        A numpy-compatible name: ``"float32"``, ``"int64"``...
    """

    shape: tuple[int, ...]
    dtype: str = "float32"

    def __post_init__(self) -> None:
        try:
            shape = tuple(int(s) for s in self.shape)
        except (TypeError, ValueError):
            raise GraphError(f"TensorType: shape must be a sequence of ints, got {self.shape!r}") from None
        if any(s < 0 for s in shape):
            raise GraphError(f"TensorType: negative dimension in shape {shape}")
        try:
            dtype = str(np.dtype(self.dtype))
        except TypeError:
            raise GraphError(f"TensorType: unknown dtype {self.dtype!r}") from None
        object.__setattr__(self, "shape", shape)
        object.__setattr__(self, "dtype", dtype)

    @property
    def concrete_shape(self) -> tuple[int, ...]:
        """The shape as ints (TVM's name; every shape here is static)."""
        return self.shape

    @property
    def ndim(self) -> int:
        """Number of dimensions."""
        return len(self.shape)

    @property
    def size(self) -> int:
        """Number of elements."""
        return int(np.prod(self.shape, dtype=np.int64))

    def __str__(self) -> str:
        if not self.shape:
            return self.dtype
        dims = ", ".join(str(s) for s in self.shape)
        return f"Tensor[({dims}), {self.dtype}]"


@dataclass(frozen=True)
class TupleType:
    """A tuple of values, one type per field (TVM's ``relay.TupleType``)."""

    fields: tuple[Type, ...]

    def __post_init__(self) -> None:
        object.__setattr__(self, "fields", tuple(self.fields))

    def __str__(self) -> str:
        return "(" + ", ".join(str(f) for f in self.fields) + ")"


@dataclass(frozen=True)
class FuncType:
    """The type of a function: its parameter types and its result type."""

    arg_types: tuple[Type, ...]
    ret_type: Type

    def __post_init__(self) -> None:
        object.__setattr__(self, "arg_types", tuple(self.arg_types))

    def __str__(self) -> str:
        return "fn (" + ", ".join(str(a) for a in self.arg_types) + f") -> {self.ret_type}"


Type = TensorType | TupleType | FuncType

#: A graph value at run time (what the numpy references take and give): an array, or a tuple of values.
Value: TypeAlias = "np.ndarray | tuple[Value, ...]"


def tensor_type(shape: Sequence[int] | int, dtype: str = "float32") -> TensorType:
    """A :class:`TensorType`; an int shape is one dimension."""
    return TensorType((shape,) if isinstance(shape, int) else tuple(shape), dtype)


def type_of_array(array: np.ndarray) -> TensorType:
    """The :class:`TensorType` of a numpy array."""
    return TensorType(tuple(array.shape), str(array.dtype))
