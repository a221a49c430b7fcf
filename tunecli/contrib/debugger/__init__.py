"""TVM's ``tvm.contrib.debugger`` face: ``debug_executor``."""
