"""GPT-2 (124M: 12 layers, hidden 768, 12 heads, vocabulary 50257) with random weights: the
causal prefill of ``seq_len`` tokens, token ids in, next-token logits at every position out
(the output layer shares the token embedding table, as GPT-2's does)."""

from __future__ import annotations

from tunecli.engine.runtime import NDArray

from ..graph_expr import Function, var
from ..ir_module import IRModule
from ..ops.broadcast import add
from ..ops.nn import dense
from ..ops.slicing import take
from ..ops.transform import reshape
from ..traversal import free_vars
from .bert import check_sizes
from .init import create_workload
from .transformer import TransformerShape, embedding_table, named_layer_norm, pre_norm_layer


def gpt2(
    s: TransformerShape, num_layers: int = 12, vocab_size: int = 50257, ids_dtype: str = "int64"
) -> Function:
    """The GPT-2 function: ``data`` (token ids, ``(batch, seq_len)``) -> logits ``(batch, seq_len,
    vocab_size)``."""
    data = var("data", shape=(s.batch, s.seq_len), dtype=ids_dtype)
    tokens = embedding_table("wte", vocab_size, s.hidden, s.dtype)
    x = add(take(tokens, data, axis=0, mode="wrap"), embedding_table("wpe", s.seq_len, s.hidden, s.dtype))
    x = reshape(x, (s.rows, s.hidden))
    for i in range(num_layers):
        x = pre_norm_layer(x, f"h{i}", s, causal=True, fused_qkv=True, approximate_gelu=True)
    logits = dense(named_layer_norm(x, "ln_f"), tokens, units=vocab_size)
    out = reshape(logits, (s.batch, s.seq_len, vocab_size))
    return Function(free_vars(out), out)


def get_workload(
    batch_size: int = 1,
    seq_len: int = 128,
    num_layers: int = 12,
    hidden: int = 768,
    heads: int = 12,
    vocab_size: int = 50257,
    dtype: str = "float32",
) -> tuple[IRModule, dict[str, NDArray]]:
    """GPT-2 with random weights: ``(mod, params)``; defaults are the 124M model's, a 128-token
    prefill (feed-forward width ``4 * hidden``).

    Parameters
    ----------
    batch_size, seq_len, num_layers, hidden, heads, vocab_size : int
    dtype : str

    Returns
    -------
    (IRModule, dict of str to NDArray)
    """
    check_sizes(hidden, heads, seq_len)
    s = TransformerShape(batch_size, seq_len, hidden, heads, 4 * hidden, dtype)
    return create_workload(gpt2(s, num_layers, vocab_size))
