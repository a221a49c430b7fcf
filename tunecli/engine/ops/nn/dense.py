"""Fully connected layer (TVM's ``topi.nn.dense``) and its weight-packed x86 form."""

from __future__ import annotations

from collections.abc import Sequence

from tunecli.engine import te
from tunecli.engine.ir import expr as E
from tunecli.errors import ExprError

#: Tag of the stage that keeps the first N columns of a product computed over padded panels.
UNPAD_TAG = "unpad_panels"


def dense(data: te.Tensor, weight: te.Tensor, bias: te.Tensor | None = None,
          out_dtype: str | None = None) -> te.Tensor:
    """``out[i, j] = sum_k data[i, k] * weight[j, k] (+ bias[j])``.

    Parameters
    ----------
    data : te.Tensor
        ``[batch, in_dim]``.
    weight : te.Tensor
        ``[out_dim, in_dim]`` (TVM's layout: one row per output feature).
    bias : te.Tensor, optional
        ``[out_dim]``.
    out_dtype : str, optional
        Accumulation and output type (default ``data.dtype``; ``int32`` for int8 inputs).

    Returns
    -------
    te.Tensor
        ``[batch, out_dim]``.
    """
    _check_dense_shapes(data, weight, bias)
    out_dtype = data.dtype if out_dtype is None else out_dtype
    batch, in_dim = data.shape
    out_dim = weight.shape[0]
    k = te.reduce_axis((0, in_dim), name="k")
    matmul = te.compute(
        (batch, out_dim),
        lambda i, j: te.sum(data[i, k].astype(out_dtype) * weight[j, k].astype(out_dtype), axis=k),
        name="T_dense",
        tag="dense",
    )
    if bias is not None:
        matmul = te.compute((batch, out_dim), lambda i, j: matmul[i, j] + bias[j].astype(out_dtype),
                            name="T_add", tag="broadcast")
    return matmul


def pack_weight(weight: te.Tensor, bn: int, name: str = "packed_weight",
                panels: int | None = None) -> te.Tensor:
    """Re-layout a ``[N, K]`` weight into ``[ceil(N / bn), K, bn]`` panels (or ``panels`` of them);
    columns past N repeat row N - 1 (a clamped read: the product's columns they give are
    dropped by ``dense_packed(..., units=N)``)."""
    n, k = weight.shape
    panels = -(-n // bn) if panels is None else panels
    if bn < 1 or panels * bn < n:
        raise ExprError(f"pack_weight: {panels} panels of {bn} do not hold {n} rows")

    def panel(z: E.Expr, y: E.Expr, x: E.Expr) -> E.Expr:
        row = z * bn + x
        return weight[row if panels * bn == n else clamped(row, n), y]

    return te.compute((panels, k, bn), panel, name=name, tag="injective,layout_transform")


def dense_pack(data: te.Tensor, weight: te.Tensor, bn: int, out_dtype: str | None = None,
               rows: int | None = None, panels: int | None = None) -> te.Tensor:
    """Dense with the weight packed into ``bn``-wide panels (TVM's ``dense_pack.x86`` compute).

    Parameters
    ----------
    data : te.Tensor
        ``[M, K]``.
    weight : te.Tensor
        ``[N, K]``.
    bn : int
        Panel width (when it does not divide N, the last panel is padded: ``pack_weight``).
    out_dtype : str, optional
        Accumulation and output type.
    rows, panels : int, optional
        Rows and panels the product is computed over, when more than M and ``ceil(N / bn)``
        (``dense_packed``).

    Returns
    -------
    te.Tensor
        ``[M, N]``; the product's input 1 is the ``packed_weight`` stage ``[ceil(N / bn), K, bn]``
        (the product is the result, or the input of its ``UNPAD_TAG`` stage).
    """
    _check_dense_shapes(data, weight, None)
    return dense_packed(data, pack_weight(weight, bn, panels=panels), out_dtype, units=weight.shape[0],
                        rows=rows)


def dense_packed(data: te.Tensor, packed_weight: te.Tensor, out_dtype: str | None = None,
                 units: int | None = None, rows: int | None = None) -> te.Tensor:
    """Dense with a weight already packed into ``[N // bn, K, bn]`` panels.

    Parameters
    ----------
    data : te.Tensor
        ``[M, K]``.
    packed_weight : te.Tensor
        ``[N // bn, K, bn]``: output feature ``j`` is panel ``j // bn``, lane ``j % bn``.
    out_dtype : str, optional
        Accumulation and output type.
    units : int, optional
        N, when the panels are padded past it (default: all of their ``N // bn * bn`` columns).
    rows : int, optional
        Rows to compute the product over, when more than M (rows past M repeat row M - 1).

    Returns
    -------
    te.Tensor
        ``[M, N]``: the product tagged ``dense_pack``, or (padded rows or panels) the product's
        first M rows and ``units`` columns, a stage tagged ``UNPAD_TAG`` (``unpad``).
    """
    if len(data.shape) != 2 or len(packed_weight.shape) != 3 or data.shape[1] != packed_weight.shape[1]:
        raise ExprError(f"dense_packed: data [M, K] and packed weight [N // bn, K, bn] expected, got "
                        f"{data.shape} and {packed_weight.shape}")
    out_dtype = data.dtype if out_dtype is None else out_dtype
    m, kdim = data.shape
    nb, _, bn = packed_weight.shape
    packw = packed_weight
    units = nb * bn if units is None else units
    rows = m if rows is None else rows
    if not 0 < units <= nb * bn or rows < m:
        raise ExprError(f"dense_packed: {units} units and {rows} rows do not fit {nb} panels of {bn} "
                        f"and {m} rows")
    k = te.reduce_axis((0, kdim), name="k")
    product = te.compute(
        (rows, nb * bn),
        lambda y, x: te.sum(
            data[y if rows == m else clamped(y, m), k].astype(out_dtype)
            * packw[x // bn, k, x % bn].astype(out_dtype), axis=k),
        name="T_dense_pack",
        tag="dense_pack",
    )
    return unpad(product, (m, units))


def clamped(index: E.Expr, extent: int) -> E.Expr:
    """``min(index, extent - 1)``: a padded row or column, whose results are dropped, reads the
    last real one (a plain load, where a guard would mask every vector or branch)."""
    return E.Min(index, E.const(extent - 1, index.dtype))


def unpad(product: te.Tensor, shape: Sequence[int]) -> te.Tensor:
    """The leading ``shape`` part of ``product`` (computed over padded rows or panels), a stage
    tagged ``UNPAD_TAG`` whose input is the product; ``product`` itself when it is that shape."""
    if tuple(int(d) for d in product.shape[-len(shape):]) == tuple(shape):
        return product
    outer = tuple(product.shape[: len(product.shape) - len(shape)])
    return te.compute((*outer, *shape), lambda *i: product(*i), name=f"{product.op.name}_unpad",
                      tag=f"injective,{UNPAD_TAG}")


def _check_dense_shapes(data: te.Tensor, weight: te.Tensor, bias: te.Tensor | None) -> None:
    if len(data.shape) != 2 or len(weight.shape) != 2:
        raise ExprError(f"dense: data and weight must be 2-D, got {data.shape} and {weight.shape}")
    if data.shape[1] != weight.shape[1]:
        raise ExprError(f"dense: reduction sizes differ: data {data.shape}, weight {weight.shape}")
    if bias is not None and tuple(bias.shape) != (weight.shape[0],):
        raise ExprError(f"dense: bias must have shape ({weight.shape[0]},), got {bias.shape}")
