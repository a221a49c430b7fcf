"""TVM's ``tvm.nd`` face: ``array``, ``empty`` and ``NDArray`` (see :mod:`tunecli.runtime`)."""

from tunecli.runtime import NDArray, array, cpu, cuda, device, empty, gpu

__all__ = ["NDArray", "array", "cpu", "cuda", "device", "empty", "gpu"]
