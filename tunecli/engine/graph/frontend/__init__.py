"""Importers of framework models into graph modules (TVM's ``relay.frontend``): ``from_onnx``."""

from .onnx import from_onnx

__all__ = ["from_onnx"]
