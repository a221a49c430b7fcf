"""Batched matrix multiply (TVM's ``topi.nn.batch_matmul``, y transposed)."""

from __future__ import annotations

from collections.abc import Sequence

from tunecli.engine import te
from tunecli.engine.ir import expr as E
from tunecli.errors import ExprError

from .dense import clamped, unpad


def batch_matmul(tensor_a: te.Tensor, tensor_b: te.Tensor, oshape: Sequence[int] | None = None,
                 out_dtype: str | None = None, transpose_a: bool = False,
                 transpose_b: bool = True) -> te.Tensor:
    """``out[b, i, j] = sum_k A[b, i, k] * B[b, j, k]`` (TVM's default layouts).

    Parameters
    ----------
    tensor_a : te.Tensor
        ``[batch, M, K]`` (``[batch, K, M]`` with ``transpose_a``).
    tensor_b : te.Tensor
        ``[batch, N, K]`` (TVM's default ``transpose_b=True``; ``[batch, K, N]`` otherwise). A
        batch of 1 on either side is broadcast.
    oshape : sequence of int, optional
        Expected output shape (checked when given).
    out_dtype : str, optional
        Accumulation and output type (default ``tensor_a.dtype``).
    transpose_a, transpose_b : bool

    Returns
    -------
    te.Tensor
        ``[max(batch_a, batch_b), M, N]``.
    """
    ab, bb, m, n, ka = _matmul_dims("batch_matmul", tensor_a, tensor_b, transpose_a, transpose_b)
    shape = (max(ab, bb), m, n)
    if oshape is not None and tuple(int(d) for d in oshape) != shape:
        raise ExprError(f"batch_matmul: oshape {tuple(oshape)} differs from the output shape {shape}")
    out_dtype = tensor_a.dtype if out_dtype is None else out_dtype
    k = te.reduce_axis((0, ka), name="k")

    def _a(b: E.Expr, i: E.Expr) -> E.Expr:
        b = b if ab != 1 else 0
        return tensor_a[b, k, i] if transpose_a else tensor_a[b, i, k]

    def _b(b: E.Expr, j: E.Expr) -> E.Expr:
        b = b if bb != 1 else 0
        return tensor_b[b, j, k] if transpose_b else tensor_b[b, k, j]

    name = "T_batch_matmul_" + ("T" if transpose_a else "N") + ("T" if transpose_b else "N")
    return te.compute(
        shape, lambda b, i, j: te.sum(_a(b, i).astype(out_dtype) * _b(b, j).astype(out_dtype), axis=k),
        name=name, tag="batch_matmul")


def batch_matmul_pack(x: te.Tensor, y: te.Tensor, bn: int, out_dtype: str | None = None,
                      transpose_a: bool = False, transpose_b: bool = True,
                      rows: int | None = None) -> te.Tensor:
    """Batch matmul reading ``y`` in ``bn``-wide panels where rows of ``y`` are not contiguous.

    With ``transpose_b`` (``y [B, N, K]``), or when ``bn`` does not divide N, a stage packs ``y``
    into ``[B, ceil(N / bn), K, bn]`` panels (tagged ``layout_transform``; input 1 of the
    product; the last one's columns past N repeat column N - 1), and the product is computed
    over the padded width, the result its first N columns (``nn.dense.unpad``);
    otherwise (``y [B, K, N]``) the product reads ``y`` as it is, its rows already contiguous
    in ``N``.

    Parameters
    ----------
    x, y : te.Tensor
        ``[B, M, K]`` (``[B, K, M]`` with ``transpose_a``) and ``[B, N, K]`` (``[B, K, N]``
        without ``transpose_b``); a batch of 1 on either side is broadcast.
    bn : int
        Panel width.
    out_dtype : str, optional
        Accumulation and output type.
    transpose_a, transpose_b : bool
    rows : int, optional
        Rows to compute the product over, when more than M (rows past M read row M - 1; the
        result is the first M).

    Returns
    -------
    te.Tensor
        ``[max(B_x, B_y), M, N]``.
    """
    xb, yb, m, n, kdim = _matmul_dims("batch_matmul_pack", x, y, transpose_a, transpose_b)
    rows = m if rows is None else rows
    if bn < 1 or rows < m:
        raise ExprError(f"batch_matmul_pack: panel width {bn} or {rows} rows for {m}")
    out_dtype = x.dtype if out_dtype is None else out_dtype
    k = te.reduce_axis((0, kdim), name="k")

    def _x(b: E.Expr, i: E.Expr) -> E.Expr:
        b = b if xb != 1 else 0
        return x[b, k, i] if transpose_a else x[b, i, k]

    padded = -(-n // bn) * bn
    if transpose_b or padded != n:
        def _panel(b: E.Expr, z: E.Expr, kk: E.Expr, v: E.Expr) -> E.Expr:
            j = z * bn + v if padded == n else clamped(z * bn + v, n)
            return y[b, j, kk] if transpose_b else y[b, kk, j]

        packed = te.compute((yb, padded // bn, kdim, bn), _panel, name="packed_y",
                            tag="injective,layout_transform")

        def _y(b: E.Expr, j: E.Expr) -> E.Expr:
            return packed[b if yb != 1 else 0, j // bn, k, j % bn]
    else:
        def _y(b: E.Expr, j: E.Expr) -> E.Expr:
            return y[b if yb != 1 else 0, k, j]

    product = te.compute(
        (max(xb, yb), rows, padded),
        lambda b, i, j: te.sum(_x(b, i if rows == m else clamped(i, m)).astype(out_dtype)
                               * _y(b, j).astype(out_dtype), axis=k),
        name="T_batch_matmul_pack",
        tag="batch_matmul",
    )
    return unpad(product, (m, n))


def _matmul_dims(op: str, a: te.Tensor, b: te.Tensor, transpose_a: bool,
                 transpose_b: bool) -> tuple[int, int, int, int, int]:
    """``(batch of a, batch of b, M, N, K)`` of a batch matmul, checked: 3-D operands, one
    reduction size, batches equal or one of them 1."""
    for t, what in ((a, "the first operand"), (b, "the second operand")):
        if len(t.shape) != 3:
            raise ExprError(f"{op}: {what} must be 3-D, got {t.shape}")
    ab, a1, a2 = a.shape
    bb, b1, b2 = b.shape
    m, ka = (a2, a1) if transpose_a else (a1, a2)
    n, kb = (b1, b2) if transpose_b else (b2, b1)
    if ka != kb:
        raise ExprError(f"{op}: reduction sizes differ: {a.shape} and {b.shape}")
    if ab != bb and 1 not in (ab, bb):
        raise ExprError(f"{op}: batch sizes {ab} and {bb} do not broadcast")
    return ab, bb, m, n, ka
