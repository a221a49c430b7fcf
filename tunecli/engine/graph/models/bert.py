"""BERT (TLCBench's ``bert-base``: 12 layers, hidden 768, 12 heads, sequence 128) with random
weights: token ids in, the last hidden state out."""

from __future__ import annotations

from tunecli.engine.runtime import NDArray
from tunecli.errors import GraphError

from ..graph_expr import Function, var
from ..ir_module import IRModule
from ..ops.broadcast import add
from ..ops.slicing import strided_slice, take
from ..ops.transform import reshape
from ..traversal import free_vars
from .init import create_workload
from .transformer import TransformerShape, embedding_table, named_layer_norm, post_norm_layer


def bert(
    s: TransformerShape, num_layers: int = 12, vocab_size: int = 30522, ids_dtype: str = "int64"
) -> Function:
    """The BERT encoder function: ``data`` (token ids, ``(batch, seq_len)``) -> ``(batch, seq_len,
    hidden)``."""
    data = var("data", shape=(s.batch, s.seq_len), dtype=ids_dtype)
    words = take(embedding_table("word_embeddings", vocab_size, s.hidden, s.dtype), data, axis=0, mode="wrap")
    positions = embedding_table("position_embeddings", s.seq_len, s.hidden, s.dtype)
    token_type = strided_slice(embedding_table("token_type_embeddings", 2, s.hidden, s.dtype), (0,), (1,))
    x = named_layer_norm(add(add(words, positions), token_type), "embeddings_ln", 1e-12)
    x = reshape(x, (s.rows, s.hidden))
    for i in range(num_layers):
        x = post_norm_layer(x, f"layer{i}", s)
    out = reshape(x, (s.batch, s.seq_len, s.hidden))
    return Function(free_vars(out), out)


def get_workload(
    batch_size: int = 1,
    seq_len: int = 128,
    num_layers: int = 12,
    hidden: int = 768,
    heads: int = 12,
    ff: int = 3072,
    vocab_size: int = 30522,
    dtype: str = "float32",
) -> tuple[IRModule, dict[str, NDArray]]:
    """BERT with random weights: ``(mod, params)``; defaults are BERT-base.

    Parameters
    ----------
    batch_size, seq_len, num_layers, hidden, heads, ff, vocab_size : int
    dtype : str

    Returns
    -------
    (IRModule, dict of str to NDArray)
    """
    check_sizes(hidden, heads, seq_len)
    return create_workload(bert(TransformerShape(batch_size, seq_len, hidden, heads, ff, dtype), num_layers,
                                vocab_size))


def check_sizes(hidden: int, heads: int, seq_len: int) -> None:
    """GraphError unless ``heads`` divides ``hidden`` and ``seq_len`` is positive."""
    if heads <= 0 or hidden % heads:
        raise GraphError(f"hidden {hidden} must be a multiple of heads {heads}")
    if seq_len <= 0:
        raise GraphError(f"seq_len {seq_len} must be positive")


