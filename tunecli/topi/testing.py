"""``topi.testing``: numpy reference implementations under TVM's names."""

from tunecli.engine.ops.reference import (
    batch_matmul,
    bias_add_python,
    conv2d_nchw_python,
    dense_python,
    depthwise_conv2d_python_nchw,
    pad_python,
    pool2d_nchw_python,
    relu_python,
)

__all__ = ["batch_matmul", "bias_add_python", "conv2d_nchw_python", "dense_python",
           "depthwise_conv2d_python_nchw", "pad_python", "pool2d_nchw_python", "relu_python"]
