"""to_onnx: the built-in networks written as ONNX compute in onnxruntime what the interpreter
computes; an operator without an ONNX form is one error naming it."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("onnx")
onnxruntime = pytest.importorskip("onnxruntime")

from tunecli.engine.graph import Function, evaluate, var  # noqa: E402
from tunecli.engine.graph.frontend.onnx_export import to_onnx  # noqa: E402
from tunecli.engine.graph.ir_module import IRModule  # noqa: E402
from tunecli.engine.graph.models import mobilenet_v2, resnet, squeezenet, vgg  # noqa: E402
from tunecli.engine.graph.ops import replicate  # noqa: E402
from tunecli.errors import GraphError  # noqa: E402

NETWORKS = {
    "resnet-18": lambda: resnet.get_workload(num_layers=18, image_shape=(3, 32, 32)),
    "mobilenet_v2": lambda: mobilenet_v2.get_workload(image_shape=(3, 32, 32)),  # clip, add
    "vgg-11": lambda: vgg.get_workload(1, image_shape=(3, 32, 32), num_layers=11),  # conv bias, dropout
    "squeezenet1.1": lambda: squeezenet.get_workload(version="1.1", image_shape=(3, 32, 32)),  # concat
}


@pytest.mark.parametrize("name", list(NETWORKS))
def test_a_builtin_network_runs_in_onnxruntime_as_in_the_interpreter(name: str) -> None:
    mod, params = NETWORKS[name]()
    session = onnxruntime.InferenceSession(to_onnx(mod, params), providers=["CPUExecutionProvider"])
    data = np.random.default_rng(0).uniform(size=(1, 3, 32, 32)).astype("float32")
    [got] = session.run(None, {"data": data})
    expected = np.asarray(evaluate(mod, inputs={**params, "data": data}))
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-7)


def test_an_operator_without_an_onnx_form() -> None:
    x = var("x", shape=(2, 3), dtype="float32")
    mod = IRModule.from_expr(Function([x], replicate.tile(x, (2, 1))))
    with pytest.raises(GraphError, match="to_onnx: tile has no ONNX form here"):
        to_onnx(mod, {})
