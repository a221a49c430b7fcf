"""Operations: the producers of tensors (placeholders and computes)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from tunecli.engine.ir import expr as E
from tunecli.engine.ir.visitor import Visitor

from .reduction import Reduce
from .tensor import IterVar, Tensor, TensorRead, extent_value


class Operation:
    """Base of operations; ``output(i)`` is the i-th produced tensor (the same object each time)."""

    name: str
    tag: str
    attrs: dict

    def __init__(self, name: str, tag: str = "", attrs: dict | None = None):
        self.name = name
        self.tag = tag
        self.attrs = dict(attrs or {})
        self._outputs: list[Tensor] = []

    @property
    def num_outputs(self) -> int:
        """Number of output tensors."""
        return len(self._outputs)

    def output(self, index: int) -> Tensor:
        """The tensor produced as output ``index``."""
        return self._outputs[index]

    @property
    def input_tensors(self) -> list[Tensor]:
        """Tensors this operation reads, in order of first appearance."""
        return []

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name})"


class PlaceholderOp(Operation):
    """An input tensor given by the caller."""

    def __init__(self, name: str, shape: Sequence[int], dtype: str):
        super().__init__(name)
        self.shape = tuple(extent_value(s) for s in shape)
        self.dtype = dtype
        self._outputs = [Tensor(self, 0, self.shape, dtype)]


class ComputeOp(Operation):
    """A tensor defined elementwise: output[axis] = body (an expression or one Reduce)."""

    def __init__(self, name: str, tag: str, attrs: dict | None, axis: Sequence[IterVar],
                 body: Sequence[E.Expr]):
        super().__init__(name, tag, attrs)
        self.axis = list(axis)
        self.body = list(body)
        first = self.body[0]
        self.reduce_axis: list[IterVar] = list(first.axis) if isinstance(first, Reduce) else []
        shape = [extent_value(iv.dom.extent) for iv in self.axis]
        self._outputs = [Tensor(self, i, shape, b.dtype) for i, b in enumerate(self.body)]

    @property
    def input_tensors(self) -> list[Tensor]:
        """Tensors this operation reads, in order of first appearance."""
        return collect_reads(self.body)


def tensor_reads(body: Iterable[E.Expr]) -> list[TensorRead]:
    """Every tensor read in ``body`` (expressions), in pre-order."""
    found: list[TensorRead] = []

    class _Reads(Visitor):
        def visit_TensorRead(self, node: TensorRead) -> None:
            found.append(node)
            self.generic_visit(node)

    walker = _Reads()
    for b in body:
        walker.visit(b)
    return found


def collect_reads(body: Iterable[E.Expr]) -> list[Tensor]:
    """The distinct tensors read in ``body`` (expressions), in order of first appearance."""
    found: list[Tensor] = []
    for read in tensor_reads(body):
        if all(t is not read.tensor for t in found):
            found.append(read.tensor)
    return found
