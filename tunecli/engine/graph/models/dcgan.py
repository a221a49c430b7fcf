"""The generator of DCGAN (Radford et al., 2015) as in TVM's ``relay.testing.dcgan``.

A code of ``random_len`` numbers becomes a ``4x4`` map of ``8 * ngf`` channels (dense, relu,
reshape); four transposed convolutions (``4x4`` kernels, stride 2) double its size to the
``64x64`` image of ``oshape``, the first three followed by batch norm and relu, the last by tanh.
Layer names are TVM's (``dense_weight``, ``g2_deconv_weight``, ``g2_batch_norm_beta`` ...).
"""

from __future__ import annotations

from tunecli.engine.runtime import NDArray
from tunecli.errors import GraphError

from ..graph_expr import Expr, Function, Var, var
from ..ir_module import IRModule
from ..ops.nn import dense
from ..ops.transform import reshape
from ..ops.unary import relu, tanh
from ..traversal import free_vars
from .init import create_workload
from .layers import batch_norm_infer, conv2d_transpose


def deconv2d(
    data: Expr,
    oshape: tuple[int, int, int],
    kshape: tuple[int, int],
    name: str,
    stride: tuple[int, int] = (2, 2),
) -> Expr:
    """A transposed convolution ``<name>`` that enlarges its input to ``oshape`` ``(C, H, W)``:
    half the kernel padded, the rest of the stride added as output padding."""
    pads = ((kshape[0] - 1) // 2, (kshape[1] - 1) // 2)
    adjust = tuple((oshape[1 + a] + 2 * pads[a] - kshape[a]) % stride[a] for a in range(2))
    return conv2d_transpose(
        data,
        name,
        kernel_size=kshape,
        strides=stride,
        channels=oshape[0],
        padding=pads,
        output_padding=adjust,
    )


def deconv2d_bn_relu(data: Expr, prefix: str, **kwargs: tuple[int, ...]) -> Expr:
    """:func:`deconv2d` ``<prefix>_deconv``, batch norm ``<prefix>_batch_norm`` (no scale), relu."""
    out = deconv2d(data, name=f"{prefix}_deconv", **kwargs)
    return relu(batch_norm_infer(out, f"{prefix}_batch_norm", epsilon=1e-5 + 1e-12, scale=False))


def get_net(
    batch_size: int,
    random_len: int = 100,
    oshape: tuple[int, int, int] = (3, 64, 64),
    ngf: int = 128,
    code: Expr | None = None,
    dtype: str = "float32",
) -> Function:
    """The generator function: ``data [batch_size, random_len]`` -> ``[batch_size, *oshape]``."""
    if tuple(oshape[-2:]) != (64, 64):
        raise GraphError(f"dcgan: the generator draws 64x64 images, got oshape {tuple(oshape)}")
    code = var("data", shape=(batch_size, random_len), dtype=dtype) if code is None else code
    body = relu(dense(code, Var("dense_weight"), units=4 * 4 * ngf * 8))
    body = reshape(body, newshape=(-1, ngf * 8, 4, 4))
    for prefix, channels, size in (("g2", ngf * 4, 8), ("g3", ngf * 2, 16), ("g4", ngf, 32)):
        body = deconv2d_bn_relu(body, prefix, oshape=(channels, size, size), kshape=(4, 4))
    body = tanh(deconv2d(body, tuple(oshape[-3:]), (4, 4), "g5_deconv"))
    return Function(free_vars(body), body)


def get_workload(
    batch_size: int,
    oshape: tuple[int, int, int] = (3, 64, 64),
    ngf: int = 128,
    random_len: int = 100,
    dtype: str = "float32",
) -> tuple[IRModule, dict[str, NDArray]]:
    """The DCGAN generator with random weights: ``(mod, params)`` (TVM's ``dcgan.get_workload``).

    Parameters
    ----------
    batch_size : int
    oshape : (int, int, int)
        The image ``(C, 64, 64)``.
    ngf : int
        Channels of the last feature map (the first has ``8 * ngf``).
    random_len : int
        Length of the random code.
    dtype : str

    Returns
    -------
    (IRModule, dict of str to NDArray)
    """
    return create_workload(get_net(batch_size, random_len, tuple(oshape), ngf, dtype=dtype))
