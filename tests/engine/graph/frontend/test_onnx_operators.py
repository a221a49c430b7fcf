"""Every ONNX operator in the converter table, imported and evaluated, gives onnxruntime's result.

The cases are grouped by operator type (``cnn_cases``, ``transformer_cases``) and parametrised from
``converters()``: a converter added without cases fails ``test_operator_matches_onnxruntime``.
"""

from __future__ import annotations

import pytest

pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

from tunecli.engine.graph.frontend.onnx_table import converters  # noqa: E402

from . import cnn_cases, transformer_cases  # noqa: E402,F401 - register the cases
from .onnx_models import CASES, assert_matches_onnxruntime  # noqa: E402


@pytest.mark.parametrize("op_type", sorted(converters()))
def test_operator_matches_onnxruntime(op_type: str) -> None:
    assert op_type in CASES, f"the ONNX converter of {op_type} has no test case here"
    for name, make in CASES[op_type].items():
        model, inputs = make()
        try:
            assert_matches_onnxruntime(model, inputs)
        except AssertionError as err:
            raise AssertionError(f"{op_type} case {name}: {err}") from None


def test_every_case_names_a_converter() -> None:
    assert set(CASES) <= set(converters())
