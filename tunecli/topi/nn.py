"""``topi.nn``: compute definitions of the neural-network operators."""

from tunecli.engine.graph.te_call import conv2d, flatten, leaky_relu, log_softmax, softmax
from tunecli.engine.ops.nn import (
    batch_matmul,
    bias_add,
    conv2d_nchw,
    conv2d_NCHWc,
    dense,
    depthwise_conv2d_nchw,
    depthwise_conv2d_NCHWc,
    get_pad_tuple,
    pad,
    pool2d,
    relu,
)

__all__ = ["batch_matmul", "bias_add", "conv2d", "conv2d_NCHWc", "conv2d_nchw", "dense",
           "depthwise_conv2d_NCHWc", "depthwise_conv2d_nchw", "flatten", "get_pad_tuple", "leaky_relu",
           "log_softmax", "pad", "pool2d", "relu", "softmax"]
