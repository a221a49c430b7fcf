"""TVM's ``tvm.relay.frontend`` face: ``relay.frontend.from_onnx(model, shape, dtype)`` and
``relay.frontend.from_pytorch(traced_module, input_infos)``."""

from tunecli.engine.graph.frontend import from_onnx, from_pytorch

__all__ = ["from_onnx", "from_pytorch"]
