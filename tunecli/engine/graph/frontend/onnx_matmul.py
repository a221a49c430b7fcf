"""ONNX matrix products: MatMul (numpy's matmul: 1-D operands, batches that broadcast) and Einsum
(two-operand contractions such as the attention products exporters emit, one-operand
transposes and sums), converted to ``nn.dense`` (a weight matrix) or ``nn.batch_matmul``.

A run-time right operand made by a transpose (``k.transpose(-1, -2)``) is read through
``batch_matmul``'s ``transpose_b``: the transpose is dropped, or keeps the last two axes in order.
"""

from __future__ import annotations

import math
import string

import numpy as np

from ..graph_expr import Call, Expr, const
from ..op_registry import OPS
from ..ops import reduce as graph_reduce
from ..ops.define import broadcast_shape
from ..ops.nn import batch_matmul, dense
from ..ops.replicate import broadcast_to
from ..ops.transform import reshape, transpose
from .onnx_node import NodeContext
from .onnx_table import Value, converter


def _weight_transposed(ctx: NodeContext, i: int) -> Expr:
    """2-D input ``i`` transposed; folded when the value is known at import."""
    name = ctx.inputs[i]
    if ctx.store.foldable(name):
        return const(np.ascontiguousarray(ctx.store.arrays[name].T))
    return transpose(ctx.expr(i), (1, 0))


def _swapped_last_axes(expr: Expr, ndim: int) -> Expr | None:
    """``expr`` with its last two axes swapped back, when ``expr`` is a transpose: its input, or
    its input under the permutation that leaves those two axes in their original order."""
    if isinstance(expr, Call) and expr.op is OPS.get("transpose") and expr.attrs.axes is not None:
        axes = [a % ndim for a in expr.attrs.axes]
        axes[-2], axes[-1] = axes[-1], axes[-2]
        return expr.args[0] if axes == list(range(ndim)) else transpose(expr.args[0], axes)
    return None


def matmul(a: Expr, b: Expr, a_shape: tuple[int, ...], b_shape: tuple[int, ...]) -> Expr:
    """numpy's ``a @ b`` of two operands of at least 2 dimensions, as a batched product."""
    batch = broadcast_shape("MatMul", a_shape[:-2], b_shape[:-2])
    m, n = a_shape[-2], b_shape[-1]
    count = math.prod(batch)
    b_source = _swapped_last_axes(b, len(b_shape))
    operands = []
    for x, shape, rows in ((a, a_shape, a_shape[-2:]), (b, b_shape, b_shape[-2:])):
        transposed = x is b and b_source is not None
        if transposed:
            x, rows = b_source, rows[::-1]
        lead = shape[:-2]
        if math.prod(lead) == 1:
            operands.append(reshape(x, (1, *rows)))
            continue
        if tuple((1,) * (len(batch) - len(lead)) + tuple(lead)) != batch:
            x = broadcast_to(x, (*batch, *rows))
        operands.append(reshape(x, (count, *rows)))
    out = batch_matmul(operands[0], operands[1], transpose_b=b_source is not None)
    return out if len(batch) == 1 else reshape(out, (*batch, m, n))


@converter("MatMul")
def _matmul(ctx: NodeContext) -> Value:
    a_shape, b_shape = ctx.shape(0), ctx.shape(1)
    a, b = ctx.expr(0), ctx.expr(1)
    if not a_shape or not b_shape:
        raise ctx.error(f"shapes {a_shape} x {b_shape}: scalar operands are not matrix products")
    squeeze = []
    if len(a_shape) == 1:
        a, a_shape = reshape(a, (1, a_shape[0])), (1, a_shape[0])
        squeeze.append(-2)
    if len(b_shape) == 1:
        b, b_shape = reshape(b, (b_shape[0], 1)), (b_shape[0], 1)
        squeeze.append(-1)
    if a_shape[-1] != b_shape[-2]:
        raise ctx.error(f"shapes {ctx.shape(0)} x {ctx.shape(1)}: inner dimensions differ")
    if len(b_shape) == 2:
        k, n = b_shape
        b_t = _weight_transposed(ctx, 1) if len(ctx.shape(1)) == 2 else transpose(b, (1, 0))
        flat = a if len(a_shape) == 2 else reshape(a, (-1, k))
        out: Expr = dense(flat, b_t, units=n)
        out_shape = (*a_shape[:-1], n)
        if len(a_shape) != 2:
            out = reshape(out, out_shape)
    else:
        out = matmul(a, b, a_shape, b_shape)
        out_shape = (*broadcast_shape("MatMul", a_shape[:-2], b_shape[:-2]), a_shape[-2], b_shape[-1])
    if squeeze:
        kept = [s for i, s in enumerate(out_shape) if i - len(out_shape) not in squeeze]
        out = reshape(out, tuple(kept))
    return out


# --- Einsum -----------------------------------------------------------------------------------------


def _parse_equation(ctx: NodeContext, ranks: list[int]) -> tuple[list[str], str]:
    """The input terms and the output term, ``...`` spelled out as upper-case labels."""
    equation = str(ctx.attr("equation", "")).replace(" ", "")
    if "->" not in equation:
        raise ctx.error(f"equation {equation!r}: only explicit equations ('...->...') are supported")
    lhs, out = equation.split("->")
    terms = lhs.split(",")
    if len(terms) != len(ranks):
        raise ctx.error(f"equation {equation!r} has {len(terms)} operands, the node {len(ranks)}")
    ellipsis_rank = 0
    for term, rank in zip(terms, ranks, strict=True):
        if "..." in term:
            ellipsis_rank = max(ellipsis_rank, rank - (len(term) - 3))
    extra = string.ascii_uppercase[:ellipsis_rank]
    spelled = []
    for term, rank in zip(terms, ranks, strict=True):
        if "..." in term:
            term = term.replace("...", extra[ellipsis_rank - (rank - (len(term) - 3)):])
        if len(term) != rank or len(set(term)) != len(term):
            raise ctx.error(
                f"equation {equation!r}: term {term!r} does not match rank {rank} without repeated labels"
            )
        spelled.append(term)
    out = out.replace("...", extra)
    return spelled, out


def _permute(x: Expr, term: str, order: str) -> Expr:
    if term == order:
        return x
    return transpose(x, tuple(term.index(c) for c in order))


@converter("Einsum", since=12)
def _einsum(ctx: NodeContext) -> Value:
    count = len(ctx.inputs)
    if count not in (1, 2):
        raise ctx.error(f"{count} operands: supported are one or two")
    shapes = [ctx.shape(i) for i in range(count)]
    terms, out = _parse_equation(ctx, [len(s) for s in shapes])
    sizes: dict[str, int] = {}
    for term, shape in zip(terms, shapes, strict=True):
        for c, s in zip(term, shape, strict=True):
            if sizes.setdefault(c, s) != s:
                raise ctx.error(f"label {c!r} has sizes {sizes[c]} and {s}")
    if set(out) - set("".join(terms)) or len(set(out)) != len(out):
        raise ctx.error(f"output term {out!r} must name distinct labels of the operands")
    exprs, terms = _sum_lonely_labels(ctx, terms, out)
    if count == 1:
        return _permute(exprs[0], terms[0], out)
    a_term, b_term = terms
    batch = "".join(c for c in out if c in a_term and c in b_term)
    contracted = "".join(c for c in a_term if c in b_term and c not in out)
    a_free = "".join(c for c in a_term if c not in b_term)
    b_free = "".join(c for c in b_term if c not in a_term)

    def size(labels: str) -> int:
        return math.prod(sizes[c] for c in labels)

    a = reshape(_permute(exprs[0], a_term, batch + a_free + contracted),
                (size(batch), size(a_free), size(contracted)))
    b = reshape(_permute(exprs[1], b_term, batch + b_free + contracted),
                (size(batch), size(b_free), size(contracted)))
    product = reshape(batch_matmul(a, b, transpose_b=True), tuple(sizes[c] for c in batch + a_free + b_free))
    return _permute(product, batch + a_free + b_free, out)


def _sum_lonely_labels(ctx: NodeContext, terms: list[str], out: str) -> tuple[list[Expr], list[str]]:
    """Each operand with the labels no other term names summed away."""
    exprs, kept = [], []
    for i, term in enumerate(terms):
        others = out + "".join(t for j, t in enumerate(terms) if j != i)
        lonely = tuple(p for p, c in enumerate(term) if c not in others)
        x = ctx.expr(i)
        if lonely:
            x = graph_reduce.sum(x, axis=lonely)
            term = "".join(c for c in term if c in others)
        exprs.append(x)
        kept.append(term)
    return exprs, kept
