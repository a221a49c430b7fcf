"""Tiny transformer blocks written in PyTorch and exported to ONNX by torch's own exporter (the
TorchScript one, opset 17): what BERT, GPT-2 and ViT exports contain, at a few units wide."""

from __future__ import annotations

import io
from collections.abc import Mapping, Sequence

import numpy as np
import onnx
import torch
import torch.nn.functional as F
from torch import nn


def _heads(y: torch.Tensor, heads: int) -> torch.Tensor:
    b, t, _ = y.shape
    return y.view(b, t, heads, -1).transpose(1, 2)


class Encoder(nn.Module):
    """A BERT layer with its embeddings: token and position lookups, a padding mask added to the
    attention scores, erf GELU, post-norm residuals."""

    def __init__(self, width: int = 16, heads: int = 2, ff: int = 32, vocab: int = 50, seq: int = 16):
        super().__init__()
        self.heads = heads
        self.tokens, self.positions = nn.Embedding(vocab, width), nn.Embedding(seq, width)
        self.ln0, self.ln1, self.ln2 = nn.LayerNorm(width), nn.LayerNorm(width), nn.LayerNorm(width)
        self.q, self.k, self.v, self.o = (nn.Linear(width, width) for _ in range(4))
        self.up, self.down = nn.Linear(width, ff), nn.Linear(ff, width)

    def forward(self, ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        b, t = ids.shape
        x = self.ln0(self.tokens(ids) + self.positions(torch.arange(t).unsqueeze(0)))
        q, k, v = (_heads(p(x), self.heads) for p in (self.q, self.k, self.v))
        scores = q @ k.transpose(-1, -2) / (q.shape[-1] ** 0.5)
        scores = scores + (1.0 - mask[:, None, None, :].to(torch.float32)) * torch.finfo(torch.float32).min
        context = (scores.softmax(-1) @ v).transpose(1, 2).reshape(b, t, -1)
        x = self.ln1(x + self.o(context))
        return self.ln2(x + self.down(F.gelu(self.up(x))))


class MaskedFillAttention(nn.Module):
    """DistilBERT's attention: the padding mask compared with 0, viewed and expanded to the scores'
    shape, then ``masked_fill`` with the smallest float."""

    def __init__(self, width: int = 16, heads: int = 2, vocab: int = 50):
        super().__init__()
        self.heads = heads
        self.tokens = nn.Embedding(vocab, width)
        self.q, self.k, self.v, self.o = (nn.Linear(width, width) for _ in range(4))

    def forward(self, ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        x = self.tokens(ids)
        b, t, _ = x.shape
        q, k, v = (_heads(p(x), self.heads) for p in (self.q, self.k, self.v))
        scores = q @ k.transpose(2, 3) / (q.shape[-1] ** 0.5)
        hidden = (mask == 0).view(b, 1, 1, t).expand_as(scores)
        scores = scores.masked_fill(hidden, torch.tensor(torch.finfo(scores.dtype).min))
        return self.o((scores.softmax(-1) @ v).transpose(1, 2).reshape(b, t, -1))


class CausalBlock(nn.Module):
    """A GPT-2 attention block: one fused QKV projection split in three, a causal mask sliced from
    a lower-triangular buffer and applied with ``where``, the tanh GELU."""

    def __init__(self, width: int = 16, heads: int = 2, seq: int = 16):
        super().__init__()
        self.heads = heads
        self.ln, self.proj = nn.LayerNorm(width), nn.Linear(width, width)
        self.qkv = nn.Linear(width, 3 * width)
        self.register_buffer("bias", torch.tril(torch.ones(seq, seq, dtype=torch.bool)).view(1, 1, seq, seq))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, d = x.shape
        q, k, v = (_heads(y, self.heads) for y in self.qkv(self.ln(x)).split(d, dim=2))
        w = torch.matmul(q, k.transpose(-1, -2)) / (v.size(-1) ** 0.5)
        w = torch.where(self.bias[:, :, :t, :t], w, torch.tensor(torch.finfo(w.dtype).min))
        y = (w.softmax(-1) @ v).transpose(1, 2).contiguous().view(b, t, d)
        return x + self.proj(y) + F.gelu(x, approximate="tanh")


class CausalSDPA(nn.Module):
    """``scaled_dot_product_attention(..., is_causal=True)``: exported as Trilu, Equal and Where."""

    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        return F.scaled_dot_product_attention(q, k, v, is_causal=True)


class PatchEmbedding(nn.Module):
    """ViT's stem: a strided convolution into patches, a class token prepended, a layer norm, the
    class token's features out."""

    def __init__(self, width: int = 16, patch: int = 4):
        super().__init__()
        self.conv = nn.Conv2d(3, width, patch, patch)
        self.cls = nn.Parameter(torch.randn(1, 1, width))
        self.ln = nn.LayerNorm(width)

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        x = self.conv(images).flatten(2).transpose(1, 2)
        x = torch.cat([self.cls.expand(x.shape[0], -1, -1), x], 1)
        return self.ln(x)[:, 0]


def export(
    module: nn.Module,
    inputs: Mapping[str, np.ndarray],
    dynamic_axes: Mapping[str, Mapping[int, str]] | None = None,
    opset: int = 17,
) -> onnx.ModelProto:
    """``module`` (seeded, in eval mode) exported to ONNX with the input names of ``inputs``."""
    module.eval()
    buffer = io.BytesIO()
    args = tuple(torch.from_numpy(v) for v in inputs.values())
    torch.onnx.export(module, args, buffer, input_names=list(inputs), opset_version=opset, dynamo=False,
                      dynamic_axes=dict(dynamic_axes) if dynamic_axes else None)
    return onnx.load_from_string(buffer.getvalue())


def torch_outputs(module: nn.Module, inputs: Mapping[str, np.ndarray]) -> Sequence[np.ndarray]:
    """``module``'s outputs on ``inputs``."""
    with torch.no_grad():
        out = module(*(torch.from_numpy(v) for v in inputs.values()))
    return [out.numpy()]
