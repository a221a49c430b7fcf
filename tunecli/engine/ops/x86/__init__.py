"""autotvm templates for x86 CPUs (``dense.x86``, ``conv2d_nchw.x86``, ``depthwise_conv2d_nchw.x86``,
``batch_matmul.x86``); import ``tunecli.engine.ops.registry`` to register them all."""
