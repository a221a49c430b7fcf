"""Operator strategies for x86 CPUs (target key ``cpu``): ``dense.x86``, ``batch_matmul.x86``,
``conv2d_nchw.x86``, ``depthwise_conv2d_nchw.x86``; ``ops.registry`` puts them in the strategy table."""
