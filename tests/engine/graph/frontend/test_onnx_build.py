"""Imported ONNX models build with relay.build and give onnxruntime's outputs."""

from __future__ import annotations

import pytest

pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

import numpy as np  # noqa: E402

from tunecli import relay  # noqa: E402
from tunecli.engine.graph.frontend import from_onnx  # noqa: E402
from tunecli.engine.graph.passes import PassContext  # noqa: E402

from .onnx_models import onnxruntime_outputs, randn  # noqa: E402
from .test_onnx_import import inverted_residual_block, residual_network  # noqa: E402


@pytest.mark.parametrize("make", [lambda: residual_network(), lambda: inverted_residual_block(13)],
                         ids=["residual", "inverted-residual"])
def test_built_onnx_model_matches_onnxruntime(make) -> None:
    model = make()
    (name,) = [i.name for i in model.graph.input if i.name not in {t.name for t in model.graph.initializer}]
    dims = [d.dim_value or 1 for d in model.graph.input[0].type.tensor_type.shape.dim]
    data = randn(*dims)
    mod, params = from_onnx(model, shape={name: data.shape})
    with PassContext(opt_level=3):
        lib = relay.build(mod, target="llvm", params=params)
    m = lib["default"](None)
    m.set_input(name, data)
    m.run()
    (expected,) = onnxruntime_outputs(model, {name: data})
    np.testing.assert_allclose(m.get_output(0).numpy(), expected, rtol=1e-4, atol=1e-5)
