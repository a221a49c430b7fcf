"""Imported ONNX models build with relay.build and give onnxruntime's outputs."""

from __future__ import annotations

import pytest

pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

import numpy as np  # noqa: E402

from tunecli import relay  # noqa: E402
from tunecli.engine.graph.frontend import from_onnx  # noqa: E402
from tunecli.engine.graph.passes import PassContext  # noqa: E402

from . import cnn_cases, transformer_cases  # noqa: E402,F401 - register the cases
from .onnx_models import CASES, built_outputs, onnxruntime_outputs, randn  # noqa: E402
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


@pytest.mark.parametrize("op_type", sorted(op for op, cases in CASES.items()))
def test_every_operator_case_builds_and_matches_onnxruntime(op_type: str) -> None:
    """Each operator case computed at run time (at least one input not folded at import) builds
    with relay.build and its compiled kernels give onnxruntime's outputs."""
    built = 0
    for name, make in CASES[op_type].items():
        model, inputs = make()
        if not inputs:
            continue
        expected = onnxruntime_outputs(model, inputs)
        mod, params = from_onnx(model, shape={key: value.shape for key, value in inputs.items()})
        got = built_outputs(mod, params, inputs)
        assert len(got) == len(expected), name
        for g, e in zip(got, expected, strict=True):
            assert g.dtype == e.dtype and g.shape == e.shape, (name, g.dtype, g.shape, e.dtype, e.shape)
            np.testing.assert_allclose(g, e, rtol=1e-4, atol=1e-5, err_msg=f"{op_type} case {name}")
        built += 1
    assert built or op_type in FOLD_ONLY, f"{op_type} has no case computed at run time"


#: Operators that only take values known at import.
FOLD_ONLY = {"Constant", "ConstantOfShape", "Shape"}
