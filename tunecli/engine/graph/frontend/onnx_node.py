"""What an ONNX operator converter sees: one node with its decoded attributes and its inputs.

Each ONNX value is either known at import (an array: an initializer, a ``Constant``, a folded shape
computation) or computed at run time (a graph expression).  :class:`ValueStore` holds both kinds;
:class:`NodeContext` gives a converter typed access to one node's inputs and attributes and
builds its error messages (``ModelImportError`` naming the operator and the node).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeAlias, TypeVar, overload

import numpy as np

from tunecli.errors import ModelImportError

from ..graph_expr import Constant, Expr, Var, const
from ..type_infer import infer_types
from ..types import TensorType

if TYPE_CHECKING:
    from google.protobuf.message import Message

#: A decoded ONNX attribute: an int, float or str, an array (a tensor attribute), a list of them, or
#: onnx's own message for the kinds no supported operator reads (a graph, a type).
AttrValue: TypeAlias = ("int | float | str | np.ndarray | Message | list[int] | list[float] | list[str] "
                        "| list[np.ndarray]")

_T = TypeVar("_T")

#: ONNX ``TensorProto.DataType`` codes of the element types the importer handles.
ONNX_DTYPES = {
    1: "float32",
    2: "uint8",
    3: "int8",
    4: "uint16",
    5: "int16",
    6: "int32",
    7: "int64",
    9: "bool",
    10: "float16",
    11: "float64",
    12: "uint32",
    13: "uint64",
}


def onnx_dtype(code: int, where: str) -> str:
    """The numpy dtype name of ONNX element type ``code`` (ModelImportError naming ``where`` otherwise)."""
    try:
        return ONNX_DTYPES[int(code)]
    except KeyError:
        raise ModelImportError(
            f"{where}: ONNX element type {code} is not supported; supported: "
            f"{', '.join(sorted(set(ONNX_DTYPES.values())))}"
        ) from None


class ValueStore:
    """The ONNX values known so far, by name: arrays known at import and graph expressions.

    With ``freeze_params`` False, a floating-point initializer used as a tensor becomes a graph
    parameter (a Var, its array in :attr:`params`); it is still readable as an array where a
    converter needs a value known at import, but is not folded into constants.  Integer
    initializers (shapes, axes, indices) always fold.
    """

    def __init__(self, initializers: Mapping[str, np.ndarray], freeze_params: bool):
        self.arrays: dict[str, np.ndarray] = dict(initializers)
        self.exprs: dict[str, Expr] = {}
        self.params: dict[str, np.ndarray] = {}
        self.param_vars: dict[str, Var] = {}
        self._initializers = set() if freeze_params else {
            name for name, a in initializers.items() if np.issubdtype(a.dtype, np.floating)
        }
        self._constants: dict[str, Constant] = {}

    def __contains__(self, name: str) -> bool:
        return name in self.arrays or name in self.exprs

    def foldable(self, name: str) -> bool:
        """Whether ``name`` is known at import and may be folded into constants."""
        return name in self.arrays and name not in self._initializers

    def known(self, name: str) -> bool:
        """Whether ``name``'s value is known at import (a graph parameter's too)."""
        return name in self.arrays

    def expr(self, name: str) -> Expr:
        """``name`` as a graph expression (a constant or parameter for a value known at import)."""
        if name in self.exprs:
            return self.exprs[name]
        array = self.arrays[name]
        if name in self._initializers:
            if name not in self.param_vars:
                self.param_vars[name] = Var(name, TensorType(array.shape, str(array.dtype)))
                self.params[name] = array
            return self.param_vars[name]
        if name not in self._constants:
            self._constants[name] = const(array, str(array.dtype))
        return self._constants[name]

    def set(self, name: str, value: Expr | np.ndarray) -> None:
        """Record output ``name`` of a node."""
        if isinstance(value, np.ndarray):
            self.arrays[name] = value
        else:
            self.exprs[name] = value


@dataclass(frozen=True)
class NodeContext:
    """One ONNX node as its converter sees it.

    Attributes
    ----------
    op_type : str
    name : str
        The node's name (``#<index>`` for an unnamed node).
    opset : int
        The model's opset of the default domain.
    attrs : mapping of str to value
        Decoded attributes: ints, floats, str, lists of them, arrays for tensors.
    inputs : tuple of str
        Input names; ``""`` for an omitted optional input.
    num_outputs : int
        How many outputs the node declares.
    """

    op_type: str
    name: str
    opset: int
    attrs: Mapping[str, AttrValue]
    inputs: tuple[str, ...]
    num_outputs: int
    store: ValueStore

    def error(self, message: str) -> ModelImportError:
        """An error naming this node: ``"<op_type> node '<name>': <message>"``."""
        return ModelImportError(f"{self.op_type} node {self.name!r}: {message}")

    @overload
    def attr(self, key: str, default: None = None) -> AttrValue | None: ...

    @overload
    def attr(self, key: str, default: _T) -> _T: ...

    def attr(self, key: str, default: object = None) -> object:
        """Attribute ``key``, or ``default`` when the node does not set it (typed as ``default``: the
        ONNX operator's definition fixes each attribute's kind)."""
        return self.attrs.get(key, default)

    def has_input(self, i: int) -> bool:
        """Whether optional input ``i`` is given."""
        return i < len(self.inputs) and self.inputs[i] != ""

    def foldable(self) -> bool:
        """Whether every given input is known at import, so the node folds into a constant."""
        return all(self.store.foldable(n) for n in self.inputs if n)

    def expr(self, i: int) -> Expr:
        """Input ``i`` as a graph expression."""
        if not self.has_input(i):
            raise self.error(f"input {i} is required")
        return self.store.expr(self.inputs[i])

    def array(self, i: int, what: str) -> np.ndarray:
        """Input ``i``'s value, which must be known at import (ModelImportError otherwise)."""
        if not self.has_input(i):
            raise self.error(f"input {i} ({what}) is required")
        name = self.inputs[i]
        if not self.store.known(name):
            raise self.error(
                f"input {i} ({what}) {name!r} is computed at run time; only values known at import "
                f"(initializers, Constant nodes, shape computations on static shapes) are supported"
            )
        return self.store.arrays[name]

    def ints(self, i: int, what: str) -> tuple[int, ...]:
        """Input ``i`` (known at import) as a tuple of ints."""
        return tuple(int(v) for v in np.asarray(self.array(i, what)).reshape(-1))

    def scalar(self, i: int, what: str) -> float:
        """Input ``i`` (known at import, one element) as a float."""
        value = np.asarray(self.array(i, what))
        if value.size != 1:
            raise self.error(f"input {i} ({what}) must hold one value, got shape {value.shape}")
        return float(value.reshape(()))

    def tensor_type(self, i: int) -> TensorType:
        """Input ``i``'s shape and dtype."""
        name = self.inputs[i]
        if self.store.known(name):
            array = self.store.arrays[name]
            return TensorType(array.shape, str(array.dtype))
        expr = self.store.exprs[name]
        t = expr.checked_type if expr.has_type else infer_types(expr)
        if not isinstance(t, TensorType):
            raise self.error(f"input {i} {name!r} is not a tensor ({t})")
        return t

    def shape(self, i: int) -> tuple[int, ...]:
        """Input ``i``'s static shape."""
        return self.tensor_type(i).shape

    def axis(self, axis: int, ndim: int, what: str = "axis") -> int:
        """``axis`` in ``[0, ndim)`` (negative counts from the end); ModelImportError when out of range."""
        if not -ndim <= axis < ndim:
            raise self.error(f"{what} {axis} is out of range for {ndim} dimensions")
        return axis % ndim

    def int_list(self, key: str, default: Sequence[int]) -> tuple[int, ...]:
        """Attribute ``key`` as a tuple of ints."""
        return tuple(int(v) for v in self.attr(key, default))
