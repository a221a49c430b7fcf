"""Weight transformations moved from every inference to build time.

A strategy's compute often re-lays out its weights inside the kernel (``kernel_vec``: the
convolution kernel in output-channel blocks; ``packed_weight``: dense panels).  When the weights
are constants those stages compute the same array on every call.  :func:`constant_frontier`
finds them (stages without reductions that read only constants, read by a stage that does
not); the compiler evaluates each once at build time and :func:`replace_stages` rebuilds the
group's stages so the kernel reads the precomputed array from a new input instead: the stage
becomes an identity copy of that input, which the schedule inlines after the strategy's
schedule has run (so the strategy's schedule still finds the stage it expects).

Build-time kernels run in the building process, so they are compiled for this machine
(:func:`build_time_target`) whatever the network's target: a build for an ARM board, a GPU or
an x86 processor with features this one lacks never runs the target's own code here.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from tunecli.engine import te
from tunecli.engine.ir.visitor import Mutator
from tunecli.engine.target import Target, as_target
from tunecli.engine.te.operation import ComputeOp, Operation, PlaceholderOp
from tunecli.engine.te.tensor import TensorRead


def build_time_target(target: Target) -> Target:
    """The target build-time kernels of a network built for ``target`` are compiled for: ``target``
    itself when its code runs on this machine, else this machine's (``llvm``).  The stages are pure
    data movement (no reductions), so either computes the same array."""
    return target if target.is_host else as_target("llvm")


def _ops_below(outs: Sequence[te.Tensor]) -> list[Operation]:
    seen: dict[int, Operation] = {}
    order: list[Operation] = []
    stack: list[tuple[Operation, bool]] = [(t.op, False) for t in outs]
    while stack:
        op, done = stack.pop()
        if done:
            order.append(op)
            continue
        if id(op) in seen:
            continue
        seen[id(op)] = op
        stack.append((op, True))
        stack.extend((t.op, False) for t in op.input_tensors)
    return order


def constant_frontier(outs: Sequence[te.Tensor], constants: Sequence[te.Tensor]) -> list[te.Tensor]:
    """The constant stages (see the module docstring) that a non-constant stage reads, in order."""
    constant_ops = {id(t.op) for t in constants}
    order = _ops_below(outs)
    for op in order:
        if (isinstance(op, ComputeOp) and not op.reduce_axis and op.num_outputs == 1 and op.input_tensors
                and all(id(t.op) in constant_ops for t in op.input_tensors)):
            constant_ops.add(id(op))
    frontier: list[te.Tensor] = []
    for op in order:
        if id(op) in constant_ops or not isinstance(op, ComputeOp):
            continue
        for t in op.input_tensors:
            if (id(t.op) in constant_ops and isinstance(t.op, ComputeOp)
                    and all(f is not t for f in frontier)):
                frontier.append(t)
    return frontier


def placeholders_read(stage: te.Tensor) -> list[te.Tensor]:
    """The placeholders ``stage`` reads (through other stages), in order of first appearance."""
    return [op.output(0) for op in _ops_below([stage]) if isinstance(op, PlaceholderOp)]


class _Reads(Mutator):
    def __init__(self, mapping: Mapping[int, Operation]):
        self.mapping = mapping

    def visit_TensorRead(self, node: TensorRead) -> TensorRead:
        indices = self.visit(node.indices)
        op = self.mapping.get(id(node.tensor.op))
        if op is None:
            return node if indices is node.indices else TensorRead(node.tensor, indices)
        return TensorRead(op.output(node.tensor.value_index), indices)


def replace_stages(outs: Sequence[te.Tensor], replace: Mapping[int, te.Tensor]) -> dict[int, te.Tensor]:
    """Rebuild the stages above the replaced ones.

    Parameters
    ----------
    outs : sequence of te.Tensor
        The tensors whose stages are rebuilt (every stage that reads a replaced one, transitively).
    replace : mapping of int to te.Tensor
        ``id(stage.op)`` -> the tensor read instead.

    Returns
    -------
    dict
        ``id(old op)`` -> the new tensor of its output 0, for every rebuilt or replaced stage.
    """
    new_ops: dict[int, Operation] = {k: t.op for k, t in replace.items()}
    for op in _ops_below(outs):
        if id(op) in new_ops or not isinstance(op, ComputeOp):
            continue
        if any(id(t.op) in new_ops for t in op.input_tensors):
            mutator = _Reads(new_ops)
            body = [mutator.visit(b) for b in op.body]
            new_ops[id(op)] = ComputeOp(op.name, op.tag, op.attrs, op.axis, body)
    return {k: op.output(0) for k, op in new_ops.items()}


def identity_stage(placeholder: te.Tensor, like: te.Tensor) -> te.Tensor:
    """A stage named and tagged as ``like`` that copies ``placeholder`` (inlined after scheduling)."""
    return te.compute(placeholder.shape, lambda *i: placeholder(*i), name=like.op.name, tag=like.op.tag)
