"""Small arguments for every built-in template (the template tests are parametrised by the registry)."""

SMALL_CASES = {
    "dense.x86": (6, 32, 12, "float32"),
    "batch_matmul.x86": (2, 4, 16, 8, "float32"),
    "conv2d_nchw.x86": (1, 6, 5, 3, 32, 3, 3, 1, 1, 1, "float32"),
    "depthwise_conv2d_nchw.x86": (1, 7, 6, 3, 2, 3, 3, 1, 1, 1, "float32"),
    "conv2d_NCHWc.x86": (("TENSOR", (1, 8, 6, 5), "float32"), ("TENSOR", (16, 8, 3, 3), "float32"), (1, 1),
                         (1, 1, 1, 1), (1, 1), "NCHW", "NCHW", "float32"),
    "depthwise_conv2d_NCHWc.x86": (("TENSOR", (1, 8, 6, 7), "float32"), ("TENSOR", (8, 1, 3, 3), "float32"),
                                   (1, 1), (1, 1, 1, 1), (1, 1), "NCHW", "NCHW", "float32"),
    "dense_pack.x86": (("TENSOR", (4, 12), "float32"), ("TENSOR", (8, 12), "float32"), None, "float32"),
    "dense_nopack.x86": (("TENSOR", (4, 12), "float32"), ("TENSOR", (8, 12), "float32"), None, "float32"),
    "tutorial/matmul": (8, 6, 12, "float32"),
    "tutorial/conv2d_no_batching": (1, 5, 6, 4, 3, 3, 3, (1, 1), (1, 1)),
    "conv2d_nchw_spatial_pack.arm_cpu": (("TENSOR", (1, 2, 5, 4), "float32"),
                                         ("TENSOR", (4, 2, 3, 3), "float32"), (1, 1), (1, 1, 1, 1), (1, 1),
                                         "float32"),
    "depthwise_conv2d_nchw.arm_cpu": (("TENSOR", (1, 6, 7, 6), "float32"),
                                      ("TENSOR", (6, 1, 3, 3), "float32"), (1, 1), (1, 1, 1, 1), (1, 1),
                                      "float32"),
    # the GPU templates on a CPU: bound loops stay loops, shared/local stages are ordinary buffers
    "conv2d_nchw.cuda": (("TENSOR", (1, 3, 5, 6), "float32"), ("TENSOR", (4, 3, 3, 3), "float32"), (1, 1),
                         (1, 1, 1, 1), (1, 1), "float32"),
    "depthwise_conv2d_nchw.cuda": (("TENSOR", (1, 4, 6, 5), "float32"), ("TENSOR", (4, 2, 3, 3), "float32"),
                                   (2, 2), (1, 1, 1, 1), (1, 1), "float32"),
    "dense_small_batch.gpu": (("TENSOR", (2, 12), "float32"), ("TENSOR", (6, 12), "float32"), None,
                              "float32"),
}
