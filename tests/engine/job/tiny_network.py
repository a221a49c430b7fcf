"""A tiny ONNX network for model-job tests (made with ``onnx.helper``): conv-relu, conv + the first
conv's output, relu, global pool, flatten, gemm: two convolutions and a dense layer, three tasks."""

from __future__ import annotations

from pathlib import Path

import numpy as np

#: The tiny network's input name and shape.
INPUT, SHAPE = "image", (1, 4, 8, 8)


def write_tiny_onnx(path: Path, classes: int = 5) -> Path:
    """Write the tiny network to ``path`` and return it."""
    from onnx import helper

    from tests.engine.graph.frontend.onnx_models import make_model

    rng = np.random.default_rng(0)

    def w(*shape: int) -> np.ndarray:
        return (rng.standard_normal(shape) * 0.3).astype("float32")

    nodes = [
        helper.make_node("Conv", [INPUT, "w1", "b1"], ["c1"], name="conv1", pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
        helper.make_node("Conv", ["r1", "w2"], ["c2"], name="conv2", pads=[1, 1, 1, 1]),
        helper.make_node("Add", ["c2", "r1"], ["s"], name="residual"),
        helper.make_node("Relu", ["s"], ["r2"], name="relu2"),
        helper.make_node("GlobalAveragePool", ["r2"], ["p"], name="pool"),
        helper.make_node("Flatten", ["p"], ["f"], name="flatten"),
        helper.make_node("Gemm", ["f", "wd", "bd"], ["y"], name="fc", transB=1),
    ]
    weights = {"w1": w(8, 4, 3, 3), "b1": w(8), "w2": w(8, 8, 3, 3), "wd": w(classes, 8), "bd": w(classes)}
    model = make_model(nodes, {INPUT: (SHAPE, "float32")}, {"y": "float32"}, weights)
    path.write_bytes(model.SerializeToString())
    return path
