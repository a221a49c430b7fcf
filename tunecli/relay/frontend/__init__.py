"""TVM's ``tvm.relay.frontend`` face: ``relay.frontend.from_onnx(model, shape, dtype)``."""

from tunecli.engine.graph.frontend import from_onnx

__all__ = ["from_onnx"]
