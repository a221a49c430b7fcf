"""TVM's ``tvm.contrib`` face: ``graph_executor`` (also by its older name ``graph_runtime``),
``debugger.debug_executor``, ``cc``, ``ndk``, ``utils`` (also by its older
name ``util``)."""
