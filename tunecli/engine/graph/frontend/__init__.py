"""Importers of framework models into graph modules (TVM's ``relay.frontend``): ``from_onnx`` and
``from_pytorch`` (through torch's ONNX exporter)."""

from .onnx import from_onnx
from .pytorch import from_pytorch

__all__ = ["from_onnx", "from_pytorch"]
