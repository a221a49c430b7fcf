"""TVM's ``tvm.contrib.ndk`` face: ``create_shared`` links with the driver ``TVM_NDK_CC`` names."""

from tunecli.engine.runtime.linker import ndk_create_shared as create_shared

__all__ = ["create_shared"]
