"""Layers of the built-in transformers (BERT, GPT-2, ViT), each creating the variables of its
weights named after the layer, in the graph form the ONNX importer gives PyTorch exports: dense
layers on the ``(batch * sequence, hidden)`` matrix, attention as ``nn.batch_matmul`` over
``batch * heads``, ``nn.layer_norm``, GELU from ``erf`` (or its tanh approximation)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..graph_expr import Expr, Var, const, var
from ..ops.broadcast import add, multiply
from ..ops.layer_norm import layer_norm
from ..ops.nn import batch_matmul, softmax
from ..ops.selection import where
from ..ops.slicing import strided_slice
from ..ops.transform import reshape, transpose
from ..ops.unary import erf, tanh
from .layers import dense_add_bias


@dataclass(frozen=True)
class TransformerShape:
    """The sizes of one transformer's activations.

    Attributes
    ----------
    batch, seq_len, hidden, heads, ff : int
        Batch size, sequence length, hidden width, attention heads, feed-forward width.
    dtype : str
    """

    batch: int
    seq_len: int
    hidden: int
    heads: int
    ff: int
    dtype: str = "float32"

    @property
    def head_size(self) -> int:
        """The width of one head."""
        return self.hidden // self.heads

    @property
    def rows(self) -> int:
        """``batch * seq_len``: the rows of the dense layers."""
        return self.batch * self.seq_len


def named_layer_norm(x: Expr, name: str, epsilon: float = 1e-5) -> Expr:
    """``nn.layer_norm`` over the last axis with the variables ``<name>_gamma`` and ``<name>_beta``."""
    return layer_norm(x, Var(f"{name}_gamma"), Var(f"{name}_beta"), axis=-1, epsilon=epsilon)


def gelu(x: Expr, dtype: str, approximate: bool = False) -> Expr:
    """``x * Φ(x)``: with erf (BERT, ViT) or the tanh approximation (GPT-2's ``gelu_new``)."""
    half, one = const(0.5, dtype), const(1.0, dtype)
    if approximate:
        cube = multiply(const(0.044715, dtype), multiply(x, multiply(x, x)))
        inner = multiply(add(x, cube), const(math.sqrt(2.0 / math.pi), dtype))
        return multiply(multiply(x, half), add(one, tanh(inner)))
    return multiply(multiply(x, half), add(one, erf(multiply(x, const(1.0 / math.sqrt(2.0), dtype)))))


def _split_heads(x2d: Expr, s: TransformerShape) -> Expr:
    """``(batch * seq, hidden)`` -> ``(batch * heads, seq, head_size)``."""
    x = reshape(x2d, (s.batch, s.seq_len, s.heads, s.head_size))
    return reshape(transpose(x, (0, 2, 1, 3)), (s.batch * s.heads, s.seq_len, s.head_size))


def attention(
    q2d: Expr, k2d: Expr, v2d: Expr, s: TransformerShape, causal: bool = False
) -> Expr:
    """Multi-head scaled dot-product attention of ``(batch * seq, hidden)`` projections; the
    result has their shape.  ``causal``: position ``i`` attends to positions ``<= i`` only."""
    q, k, v = (_split_heads(t, s) for t in (q2d, k2d, v2d))
    scores = multiply(batch_matmul(q, k), const(1.0 / math.sqrt(s.head_size), s.dtype))
    if causal:
        keep = np.tril(np.ones((s.seq_len, s.seq_len), dtype=bool)).reshape(1, s.seq_len, s.seq_len)
        scores = where(const(keep), scores, const(float(np.finfo(s.dtype).min), s.dtype))
    context = batch_matmul(softmax(scores, axis=-1), v, transpose_b=False)
    context = reshape(context, (s.batch, s.heads, s.seq_len, s.head_size))
    return reshape(transpose(context, (0, 2, 1, 3)), (s.rows, s.hidden))


def self_attention(x2d: Expr, name: str, s: TransformerShape, fused_qkv: bool, causal: bool = False) -> Expr:
    """Projections, attention and the output projection of ``x2d`` (``(batch * seq, hidden)``);
    ``fused_qkv``: one dense layer of width ``3 * hidden`` split in three (GPT-2's ``c_attn``)."""
    if fused_qkv:
        qkv = dense_add_bias(x2d, f"{name}_qkv", 3 * s.hidden)
        q, k, v = (strided_slice(qkv, (i * s.hidden,), ((i + 1) * s.hidden,), (1,), (1,)) for i in range(3))
    else:
        q, k, v = (dense_add_bias(x2d, f"{name}_{p}", s.hidden) for p in ("query", "key", "value"))
    return dense_add_bias(attention(q, k, v, s, causal), f"{name}_output", s.hidden)


def feed_forward(x2d: Expr, name: str, s: TransformerShape, approximate_gelu: bool = False) -> Expr:
    """``dense(ff) -> gelu -> dense(hidden)`` of ``(batch * seq, hidden)`` rows."""
    up = dense_add_bias(x2d, f"{name}_intermediate", s.ff)
    return dense_add_bias(gelu(up, s.dtype, approximate_gelu), f"{name}_output", s.hidden)


def post_norm_layer(x2d: Expr, name: str, s: TransformerShape, epsilon: float = 1e-12) -> Expr:
    """A BERT encoder layer: attention and feed-forward, each added to its input and then
    layer-normalised."""
    h = named_layer_norm(add(self_attention(x2d, f"{name}_attention", s, False), x2d), f"{name}_attention_ln",
                         epsilon)
    return named_layer_norm(add(feed_forward(h, f"{name}_ffn", s), h), f"{name}_output_ln", epsilon)


def pre_norm_layer(
    x2d: Expr, name: str, s: TransformerShape, causal: bool, fused_qkv: bool, approximate_gelu: bool,
    epsilon: float = 1e-5,
) -> Expr:
    """A GPT-2 / ViT block: layer norm, attention, residual add; layer norm, feed-forward,
    residual add."""
    attn = self_attention(named_layer_norm(x2d, f"{name}_ln1", epsilon), f"{name}_attention", s, fused_qkv,
                          causal)
    h = add(x2d, attn)
    mlp = feed_forward(named_layer_norm(h, f"{name}_ln2", epsilon), f"{name}_mlp", s, approximate_gelu)
    return add(h, mlp)


def embedding_table(name: str, rows: int, width: int, dtype: str) -> Var:
    """An embedding table variable ``<name>_weight`` of shape ``(rows, width)``."""
    return var(f"{name}_weight", shape=(rows, width), dtype=dtype)
