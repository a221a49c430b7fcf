"""The ONNX converter table: one :class:`OnnxConverter` per supported ONNX operator type.

A converter turns one node into graph expressions (``convert``) and/or computes it with numpy when
every input is known at import (``fold``: the Shape/Gather/Unsqueeze/Concat chains exporters emit
around Reshape).  An operator with only ``fold`` accepts nothing computed at run time.  Each entry
names the range of model opsets whose semantics it implements.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np

from tunecli.errors import GraphError

from ..graph_expr import Expr
from .onnx_node import NodeContext

#: Lowest and highest default-domain opset the importer reads.
MIN_OPSET = 7
MAX_OPSET = 25

#: A node's output: a graph expression, or an array known at import.
Value = Expr | np.ndarray
Outputs = Value | tuple[Value, ...]
Converter = Callable[[NodeContext], Outputs]


@dataclass(frozen=True)
class OnnxConverter:
    """How one ONNX operator type is imported.

    Attributes
    ----------
    op_type : str
    since, until : int
        The model opsets (inclusive) whose semantics the converter implements.
    convert : callable or None
        ``convert(ctx)`` builds the node's graph expressions; None when only values known at
        import are accepted.
    fold : callable or None
        ``fold(ctx)`` computes the outputs with numpy; used when every input is known at import
        (and always when ``convert`` is None).
    """

    op_type: str
    since: int
    until: int
    convert: Converter | None
    fold: Converter | None

    def supports(self, opset: int) -> bool:
        """Whether the converter implements ``opset``'s semantics."""
        return self.since <= opset <= self.until

    @property
    def opsets(self) -> str:
        """The supported opset range as text (``"7-25"``)."""
        return f"{self.since}-{self.until}"


#: Every supported ONNX operator, by op type; read it through :func:`converters`.
CONVERTERS: dict[str, OnnxConverter] = {}
#: The modules (of this package) whose ``@converter``/``@folder`` functions fill :data:`CONVERTERS`.
CONVERTER_MODULES = (
    "onnx_nn", "onnx_matmul", "onnx_math", "onnx_index", "onnx_tensor", "onnx_vision", "onnx_control"
)
_loaded: list[str] = []


def converters() -> Mapping[str, OnnxConverter]:
    """Every supported ONNX operator, by op type: :data:`CONVERTERS`, filled at the first call by
    loading :data:`CONVERTER_MODULES`."""
    for name in CONVERTER_MODULES:
        if name not in _loaded:
            importlib.import_module(f"{__package__}.{name}")
            _loaded.append(name)
    return CONVERTERS


def converter(
    op_type: str, since: int = MIN_OPSET, until: int = MAX_OPSET, fold: Converter | None = None
) -> Callable[[Converter], Converter]:
    """Register the decorated function as the graph converter of ``op_type``."""

    def register(fn: Converter) -> Converter:
        add_converter(OnnxConverter(op_type, since, until, fn, fold))
        return fn

    return register


def folder(op_type: str, since: int = MIN_OPSET, until: int = MAX_OPSET) -> Callable[[Converter], Converter]:
    """Register the decorated function as the numpy fold of ``op_type``, which accepts only values
    known at import."""

    def register(fn: Converter) -> Converter:
        add_converter(OnnxConverter(op_type, since, until, None, fn))
        return fn

    return register


def add_converter(entry: OnnxConverter) -> None:
    """Add ``entry`` to :data:`CONVERTERS` (each op type once)."""
    if entry.op_type in CONVERTERS:
        raise GraphError(f"ONNX operator {entry.op_type} has two converters")
    CONVERTERS[entry.op_type] = entry


def supported_operators() -> str:
    """``"Add (7-25), AveragePool (7-25), ..."``: the supported operators with their opsets."""
    table = converters()
    return ", ".join(f"{op} ({table[op].opsets})" for op in sorted(table))
