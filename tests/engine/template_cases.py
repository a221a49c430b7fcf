"""Small arguments for every built-in template (the template tests are parametrised by the registry),
and what TVM prints for the seed's tutorial conv2d space."""

#: What TVM prints for ``print(task.config_space)`` of the seed's task
#: ``tutorial/conv2d_no_batching(1, 7, 7, 512, 512, 3, 3, (1, 1), (1, 1))``.
SEED_SPACE = """ConfigSpace (len=10454400, space_map=
   0 tile_f: Split(policy=factors, product=512, num_outputs=4) len=220
   1 tile_y: Split(policy=factors, product=7, num_outputs=4) len=4
   2 tile_x: Split(policy=factors, product=7, num_outputs=4) len=4
   3 tile_rc: Split(policy=factors, product=512, num_outputs=3) len=55
   4 tile_ry: Split(policy=factors, product=3, num_outputs=3) len=3
   5 tile_rx: Split(policy=factors, product=3, num_outputs=3) len=3
   6 auto_unroll_max_step: OtherOption([0, 512, 1500]) len=3
   7 unroll_explicit: OtherOption([0, 1]) len=2
)"""

SMALL_CASES = {
    "dense.x86": (6, 32, 12, "float32"),
    "batch_matmul.x86": (("TENSOR", (2, 4, 8), "float32"), ("TENSOR", (2, 16, 8), "float32"), (2, 4, 16),
                         "float32", False, True),
    "conv2d_nchw.x86": (1, 6, 5, 3, 32, 3, 3, 1, 1, 1, "float32"),
    "depthwise_conv2d_nchw.x86": (1, 7, 6, 3, 2, 3, 3, 1, 1, 1, "float32"),
    "conv2d_NCHWc.x86": (("TENSOR", (1, 8, 6, 5), "float32"), ("TENSOR", (16, 8, 3, 3), "float32"), (1, 1),
                         (1, 1, 1, 1), (1, 1), "NCHW", "NCHW", "float32"),
    "conv2d_NCHWc_winograd.x86": (("TENSOR", (1, 8, 6, 5), "float32"), ("TENSOR", (16, 8, 3, 3), "float32"),
                                  (1, 1), (1, 1, 1, 1), (1, 1), "NCHW", "NCHW", "float32"),
    "depthwise_conv2d_NCHWc.x86": (("TENSOR", (1, 8, 6, 7), "float32"), ("TENSOR", (8, 1, 3, 3), "float32"),
                                   (1, 1), (1, 1, 1, 1), (1, 1), "NCHW", "NCHW", "float32"),
    "conv2d_nchw_blocked.x86": (1, 7, 6, 8, 16, 3, 3, 2, 1, 1, "float32"),
    "conv2d_nchw_winograd.x86": (1, 6, 5, 4, 16, 3, 3, 1, 1, 1, "float32"),
    "conv2d_nchw_1x1.x86": (1, 3, 13, 8, 12, 1, 1, 1, 0, 1, "float32"),
    "conv2d_nchw_pixels.x86": (1, 9, 11, 3, 8, 5, 5, 2, 2, 1, "float32"),
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
    "dense_int8.cuda": (("TENSOR", (3, 32), "int8"), ("TENSOR", (6, 32), "int8"), None, "int32"),
    "conv3d_ncdhw.x86": (("TENSOR", (1, 4, 3, 5, 6), "float32"), ("TENSOR", (8, 4, 3, 3, 3), "float32"),
                         (1, 2, 1), (1, 1, 1, 0, 1, 1), (1, 1, 1), "float32"),
    "conv2d_transpose_nchw.x86": (("TENSOR", (1, 4, 3, 5), "float32"), ("TENSOR", (4, 6, 4, 4), "float32"),
                                  (2, 2), (1, 1, 1, 1), "float32", (1, 0)),
}
