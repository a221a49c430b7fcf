"""TVM's ``tvm.relay.nn`` face: the neural-network operator constructors."""

from tunecli.engine.graph.ops.conv import contrib_conv2d_nchwc, contrib_depthwise_conv2d_nchwc, conv2d
from tunecli.engine.graph.ops.conv3d import conv3d, global_avg_pool3d
from tunecli.engine.graph.ops.conv_transpose import conv2d_transpose
from tunecli.engine.graph.ops.nn import (
    batch_flatten,
    batch_matmul,
    batch_norm,
    bias_add,
    dense,
    dropout,
    dropout_raw,
    log_softmax,
    pad,
    softmax,
)
from tunecli.engine.graph.ops.pool import (
    adaptive_avg_pool2d,
    avg_pool2d,
    global_avg_pool2d,
    global_max_pool2d,
    max_pool2d,
)
from tunecli.engine.graph.ops.unary import leaky_relu, relu

__all__ = [
    "adaptive_avg_pool2d",
    "avg_pool2d",
    "batch_flatten",
    "batch_matmul",
    "batch_norm",
    "bias_add",
    "contrib_conv2d_nchwc",
    "contrib_depthwise_conv2d_nchwc",
    "conv2d",
    "conv2d_transpose",
    "conv3d",
    "dense",
    "dropout",
    "dropout_raw",
    "global_avg_pool2d",
    "global_avg_pool3d",
    "global_max_pool2d",
    "leaky_relu",
    "log_softmax",
    "max_pool2d",
    "pad",
    "relu",
    "softmax",
]
