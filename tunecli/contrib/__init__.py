"""TVM's ``tvm.contrib`` face: ``graph_executor``, ``debugger.debug_executor``, ``cc``, ``ndk``, ``utils``."""
