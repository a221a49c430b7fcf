"""TVM's ``tvm.contrib.cc`` face: ``create_shared`` and ``cross_compiler`` (compile functions for
``export_library``)."""

from tunecli.engine.runtime.linker import create_shared, cross_compiler

__all__ = ["create_shared", "cross_compiler"]
