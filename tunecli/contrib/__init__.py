"""TVM's ``tvm.contrib`` face: ``graph_executor``."""
