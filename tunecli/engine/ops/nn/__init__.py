"""Compute definitions of the neural-network operators (TVM's ``topi.nn``)."""

from tunecli.engine.te.window import conv2d_output_shape, get_pad_tuple

from .batch_matmul import batch_matmul, batch_matmul_pack
from .conv2d import conv2d_nchw, conv2d_NCHWc
from .dense import dense, dense_pack, dense_packed, pack_weight
from .depthwise_conv2d import depthwise_conv2d_nchw, depthwise_conv2d_NCHWc
from .elemwise import add, bias_add, broadcast_shape, relu
from .pad import pad
from .pooling import pool2d

__all__ = [
    "batch_matmul", "batch_matmul_pack", "conv2d_NCHWc", "conv2d_nchw", "conv2d_output_shape", "dense",
    "dense_pack", "dense_packed", "pack_weight", "depthwise_conv2d_NCHWc", "depthwise_conv2d_nchw", "add",
    "bias_add", "broadcast_shape", "relu", "get_pad_tuple", "pad", "pool2d",
]
