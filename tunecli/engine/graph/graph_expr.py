"""Graph expressions: Var, Constant, Call, Tuple, TupleGetItem and Function (TVM's Relay nodes).

Nodes are immutable and compared and hashed by identity: a node used twice is one value
computed once (a DAG).  Each node's ``checked_type`` is filled in once by type inference
(``type_infer.infer_types``); reading it before raises GraphError.  ``a + b``, ``a - b``, ``a * b``
and ``a / b`` build broadcasting calls; ``expr[i]`` reads field ``i`` of a tuple-valued expression.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import NoReturn, Protocol, TypeAlias

import numpy as np
import numpy.typing as npt

from tunecli.errors import GraphError

from .op_registry import OPS, Attrs, NoAttrs, Op
from .types import TensorType, Type, tensor_type


class HasNumpy(Protocol):
    """An array object of another library that gives its values as numpy (a runtime NDArray, a torch
    tensor)."""

    def numpy(self) -> np.ndarray: ...


#: What a constant (or a bound parameter, an input value) is made from: anything numpy makes an
#: array of, or an array object with ``numpy()``.
ArrayData: TypeAlias = "npt.ArrayLike | HasNumpy"
#: An argument of an operator builder: a graph expression, or data that becomes a constant.
Operand: TypeAlias = "Expr | ArrayData"


class Expr:
    """Base of every graph node."""

    __slots__ = ("_checked_type",)
    _checked_type: Type | None

    def __init__(self) -> None:
        object.__setattr__(self, "_checked_type", None)

    def __setattr__(self, name: str, value: object) -> None:
        raise GraphError(f"{type(self).__name__} nodes are immutable (tried to set {name!r})")

    @property
    def checked_type(self) -> Type:
        """The type found by type inference (GraphError when inference has not run on this node)."""
        if self._checked_type is None:
            raise GraphError(
                f"{self!r} has no checked_type yet: run relay.transform.InferType() on its module first"
            )
        return self._checked_type

    @property
    def has_type(self) -> bool:
        """Whether type inference has given this node its type."""
        return self._checked_type is not None

    def __getitem__(self, index: int) -> TupleGetItem:
        if not isinstance(index, int):
            raise GraphError(f"a graph expression is indexed by an int field number, got {index!r}")
        return TupleGetItem(self, index)

    def __iter__(self) -> NoReturn:
        raise GraphError(
            f"{self!r} cannot be unpacked: index its fields (expr[0]) or use the TupleWrapper "
            f"an operator with several outputs returns"
        )

    def _binary(self, op_name: str, other: Operand, swap: bool = False) -> Call:
        rhs = other if isinstance(other, Expr) else const(other, _dtype_hint(self))
        args = (rhs, self) if swap else (self, rhs)
        return Call(OPS.get(op_name), args)

    def __add__(self, other: Operand) -> Call:
        return self._binary("add", other)

    def __radd__(self, other: Operand) -> Call:
        return self._binary("add", other, swap=True)

    def __sub__(self, other: Operand) -> Call:
        return self._binary("subtract", other)

    def __rsub__(self, other: Operand) -> Call:
        return self._binary("subtract", other, swap=True)

    def __mul__(self, other: Operand) -> Call:
        return self._binary("multiply", other)

    def __rmul__(self, other: Operand) -> Call:
        return self._binary("multiply", other, swap=True)

    def __truediv__(self, other: Operand) -> Call:
        return self._binary("divide", other)

    def __rtruediv__(self, other: Operand) -> Call:
        return self._binary("divide", other, swap=True)

    __hash__ = object.__hash__

    def __eq__(self, other: object) -> bool:
        return self is other


def _dtype_hint(expr: Expr) -> str:
    t = expr._checked_type
    if isinstance(t, TensorType):
        return t.dtype
    if isinstance(expr, Var) and isinstance(expr.type_annotation, TensorType):
        return expr.type_annotation.dtype
    if isinstance(expr, Constant):
        return str(expr.data.dtype)
    return "float32"


class Var(Expr):
    """A named input of a function (TVM's ``relay.Var``); ``type_annotation`` may be unknown (None).

    An unannotated variable gets its type from its first use (a conv2d weight from the conv's
    ``channels``/``kernel_size`` and its data), as TVM's type solver does.
    """

    __slots__ = ("name_hint", "type_annotation")
    name_hint: str
    type_annotation: Type | None

    def __init__(self, name_hint: str, type_annotation: Type | None = None):
        super().__init__()
        if not isinstance(name_hint, str) or not name_hint:
            raise GraphError(f"Var: the name must be a non-empty str, got {name_hint!r}")
        object.__setattr__(self, "name_hint", name_hint)
        object.__setattr__(self, "type_annotation", type_annotation)

    def __repr__(self) -> str:
        return f"Var(%{self.name_hint})"


class Constant(Expr):
    """A constant tensor (TVM's ``relay.Constant``); ``data`` is a read-only numpy array."""

    __slots__ = ("data",)
    data: np.ndarray

    def __init__(self, data: ArrayData):
        super().__init__()
        array = np.asarray(_numpy_of(data))
        view = array.view()
        view.flags.writeable = False
        object.__setattr__(self, "data", view)

    def __repr__(self) -> str:
        return f"Constant({self.data.shape}, {self.data.dtype})"


def _numpy_of(data: ArrayData) -> npt.ArrayLike:
    return data.numpy() if hasattr(data, "numpy") and not isinstance(data, np.ndarray) else data


class Call(Expr):
    """An operator (or a function) applied to arguments, with the operator's attribute record."""

    __slots__ = ("op", "args", "attrs")
    op: Op | Function
    args: tuple[Expr, ...]
    attrs: Attrs

    def __init__(self, op: Op | Function, args: Sequence[Expr], attrs: Attrs | None = None):
        super().__init__()
        if not isinstance(op, (Op, Function)):
            raise GraphError(f"Call: op must be an Op (relay.op.get(name)) or a Function, got {op!r}")
        args = tuple(args)
        for i, a in enumerate(args):
            if not isinstance(a, Expr):
                name = op.name if isinstance(op, Op) else "function"
                raise GraphError(f"{name}: argument {i} must be a graph expression, got {type(a).__name__}")
        if isinstance(op, Op):
            if len(args) != op.num_inputs:
                raise GraphError(
                    f"{op.name}: takes {op.num_inputs} arguments {op.arg_names}, got {len(args)}"
                )
            attrs = op.attrs_type() if attrs is None else attrs
            if not isinstance(attrs, op.attrs_type):
                raise GraphError(
                    f"{op.name}: attrs must be {op.attrs_type.__name__}, got {type(attrs).__name__}"
                )
        object.__setattr__(self, "op", op)
        object.__setattr__(self, "args", args)
        object.__setattr__(self, "attrs", attrs if attrs is not None else NoAttrs())

    def __repr__(self) -> str:
        return f"Call({self.op.name if isinstance(self.op, Op) else 'fn'}, {len(self.args)} args)"


class Tuple(Expr):
    """A tuple of values (TVM's ``relay.Tuple``)."""

    __slots__ = ("fields",)
    fields: tuple[Expr, ...]

    def __init__(self, fields: Sequence[Expr]):
        super().__init__()
        fields = tuple(fields)
        for i, f in enumerate(fields):
            if not isinstance(f, Expr):
                raise GraphError(f"Tuple: field {i} must be a graph expression, got {type(f).__name__}")
        object.__setattr__(self, "fields", fields)

    def __len__(self) -> int:
        return len(self.fields)

    def __repr__(self) -> str:
        return f"Tuple({len(self.fields)} fields)"


class TupleGetItem(Expr):
    """Field ``index`` of a tuple-valued expression (TVM's ``relay.TupleGetItem``)."""

    __slots__ = ("tuple_value", "index")
    tuple_value: Expr
    index: int

    def __init__(self, tuple_value: Expr, index: int):
        super().__init__()
        if not isinstance(tuple_value, Expr):
            raise GraphError(f"TupleGetItem: expected a graph expression, got {type(tuple_value).__name__}")
        object.__setattr__(self, "tuple_value", tuple_value)
        object.__setattr__(self, "index", int(index))

    def __repr__(self) -> str:
        return f"TupleGetItem({self.tuple_value!r}, {self.index})"


class Function(Expr):
    """A function of ``params`` computing ``body`` (TVM's ``relay.Function``).

    ``attrs`` is a read-only mapping (TVM's function attributes, e.g. ``{"Primitive": 1}`` on a
    fused group); :meth:`with_attr` returns a copy with one more.
    """

    __slots__ = ("params", "body", "ret_type", "attrs")
    params: tuple[Var, ...]
    body: Expr
    ret_type: Type | None
    attrs: Mapping[str, object]

    def __init__(
        self,
        params: Sequence[Var],
        body: Expr,
        ret_type: Type | None = None,
        type_params: Sequence[object] | None = None,  # TVM's generic type parameters: none accepted
        attrs: Mapping[str, object] | None = None,
    ):
        super().__init__()
        if type_params:
            raise GraphError("Function: type parameters (generic functions) are not supported")
        params = tuple(params)
        for p in params:
            if not isinstance(p, Var):
                raise GraphError(f"Function: parameters must be Vars, got {type(p).__name__}")
        names = [p.name_hint for p in params]
        if len(set(params)) != len(params):
            raise GraphError(f"Function: a parameter is listed twice in {names}")
        if not isinstance(body, Expr):
            raise GraphError(f"Function: the body must be a graph expression, got {type(body).__name__}")
        object.__setattr__(self, "params", params)
        object.__setattr__(self, "body", body)
        object.__setattr__(self, "ret_type", ret_type)
        object.__setattr__(self, "attrs", MappingProxyType(dict(attrs or {})))

    def with_attr(self, key: str, value: object) -> Function:
        """A copy of this function with attribute ``key`` set."""
        return Function(self.params, self.body, self.ret_type, attrs={**self.attrs, key: value})

    def __repr__(self) -> str:
        return f"Function({', '.join('%' + p.name_hint for p in self.params)})"


class TupleWrapper:
    """The several outputs of one call (TVM's ``relay.TupleWrapper``): ``bn[0]``, ``out, mean, var = bn``.

    Not an expression itself: ``astuple()`` gives the tuple-valued expression.
    """

    def __init__(self, tuple_value: Expr, size: int):
        self.tuple_value = tuple_value
        self.size = size

    def astuple(self) -> Expr:
        """The tuple-valued expression."""
        return self.tuple_value

    def __getitem__(self, index: int) -> TupleGetItem:
        if not isinstance(index, int) or not -self.size <= index < self.size:
            raise IndexError(f"field {index!r} of a {self.size}-tuple")
        return TupleGetItem(self.tuple_value, index % self.size)

    def __len__(self) -> int:
        return self.size

    def __repr__(self) -> str:
        return f"TupleWrapper({self.tuple_value!r}, {self.size})"


def var(
    name_hint: str,
    type_annotation: Type | str | None = None,
    shape: Sequence[int] | None = None,
    dtype: str = "float32",
) -> Var:
    """A variable (TVM's ``relay.var``): ``var("x", shape=(1, 3), dtype="float32")``.

    Parameters
    ----------
    name_hint : str
    type_annotation : TensorType or str, optional
        A type, or a dtype name for a scalar.
    shape : sequence of int, optional
        Gives the type ``TensorType(shape, dtype)``.
    dtype : str

    Returns
    -------
    Var
    """
    if type_annotation is not None and shape is not None:
        raise GraphError(f"var {name_hint!r}: give a type_annotation or a shape, not both")
    if isinstance(type_annotation, str):
        type_annotation = TensorType((), type_annotation)
    if shape is not None:
        type_annotation = tensor_type(shape, dtype)
    return Var(name_hint, type_annotation)


def const(value: ArrayData, dtype: str | None = None) -> Constant:
    """A constant (TVM's ``relay.const``): without ``dtype``, 64-bit floats and ints (Python numbers
    and numpy arrays alike) become float32 and int32, as in TVM."""
    array = np.asarray(_numpy_of(value), dtype=dtype)
    if dtype is None:
        narrow = {np.dtype("float64"): "float32", np.dtype("int64"): "int32"}.get(array.dtype)
        array = array.astype(narrow) if narrow else array
    return Constant(array)


def set_checked_type(expr: Expr, t: Type) -> None:
    """Record the inferred type of ``expr`` (type inference only; a node's type never changes)."""
    if expr._checked_type is not None and expr._checked_type != t:
        raise GraphError(f"{expr!r}: inferred type {t} differs from its earlier type {expr._checked_type}")
    object.__setattr__(expr, "_checked_type", t)
