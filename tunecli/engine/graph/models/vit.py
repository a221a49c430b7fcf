"""ViT (``vit-b16``: 16x16 patches of a 224x224 image, 12 layers, hidden 768, 12 heads) with random
weights: an image in, class scores out."""

from __future__ import annotations

from tunecli.engine.runtime import NDArray
from tunecli.errors import GraphError

from ..graph_expr import Function, var
from ..ir_module import IRModule
from ..ops.broadcast import add
from ..ops.conv import conv2d
from ..ops.nn import bias_add
from ..ops.replicate import broadcast_to
from ..ops.slicing import strided_slice
from ..ops.transform import concatenate, reshape, transpose
from ..traversal import free_vars
from .bert import check_sizes
from .init import create_workload
from .layers import dense_add_bias
from .transformer import TransformerShape, named_layer_norm, pre_norm_layer


def vit(
    s: TransformerShape, image_size: int, patch_size: int, num_layers: int = 12, num_classes: int = 1000
) -> Function:
    """The ViT function: ``data`` (``(batch, 3, image_size, image_size)``) -> ``(batch, num_classes)``;
    ``s.seq_len`` is the number of patches plus the class token."""
    grid = image_size // patch_size
    data = var("data", shape=(s.batch, 3, image_size, image_size), dtype=s.dtype)
    patches = conv2d(data, var("patch_embed_weight"), strides=(patch_size, patch_size), channels=s.hidden,
                     kernel_size=(patch_size, patch_size))
    patches = bias_add(patches, var("patch_embed_bias"), axis=1)
    tokens = transpose(reshape(patches, (s.batch, s.hidden, grid * grid)), (0, 2, 1))
    cls = broadcast_to(var("cls_token_weight", shape=(1, 1, s.hidden), dtype=s.dtype), (s.batch, 1, s.hidden))
    x = add(concatenate([cls, tokens], axis=1), var("pos_embed_weight", shape=(1, s.seq_len, s.hidden),
                                                    dtype=s.dtype))
    x = reshape(x, (s.rows, s.hidden))
    for i in range(num_layers):
        x = pre_norm_layer(x, f"block{i}", s, causal=False, fused_qkv=True, approximate_gelu=False,
                           epsilon=1e-6)
    x = reshape(named_layer_norm(x, "norm", 1e-6), (s.batch, s.seq_len, s.hidden))
    first = reshape(strided_slice(x, (0,), (1,), (1,), (1,)), (s.batch, s.hidden))
    out = dense_add_bias(first, "head", num_classes)
    return Function(free_vars(out), out)


def get_workload(
    batch_size: int = 1,
    image_size: int = 224,
    patch_size: int = 16,
    num_layers: int = 12,
    hidden: int = 768,
    heads: int = 12,
    ff: int = 3072,
    num_classes: int = 1000,
    dtype: str = "float32",
) -> tuple[IRModule, dict[str, NDArray]]:
    """ViT with random weights: ``(mod, params)``; defaults are ViT-B/16.

    Parameters
    ----------
    batch_size, image_size, patch_size, num_layers, hidden, heads, ff, num_classes : int
    dtype : str

    Returns
    -------
    (IRModule, dict of str to NDArray)
    """
    if patch_size <= 0 or image_size % patch_size:
        raise GraphError(f"patch_size {patch_size} must divide image_size {image_size}")
    seq_len = (image_size // patch_size) ** 2 + 1
    check_sizes(hidden, heads, seq_len)
    s = TransformerShape(batch_size, seq_len, hidden, heads, ff, dtype)
    return create_workload(vit(s, image_size, patch_size, num_layers, num_classes))
