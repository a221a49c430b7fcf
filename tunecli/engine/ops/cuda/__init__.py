"""Operator strategies for NVIDIA GPUs (target keys ``cuda`` and ``gpu``), with TVM's template names,
workloads and knobs: ``conv2d_nchw.cuda``, ``depthwise_conv2d_nchw.cuda``, ``dense_small_batch.gpu``."""
