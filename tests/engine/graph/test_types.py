"""Tensor and tuple types."""

from __future__ import annotations

import numpy as np
import pytest

from tunecli.engine.graph.types import TensorType, TupleType, tensor_type, type_of_array
from tunecli.errors import GraphError


def test_tensor_types_normalise_and_compare_by_value() -> None:
    t = TensorType([1, np.int64(3)], np.float32)  # type: ignore[arg-type]
    assert t == TensorType((1, 3), "float32") and t.shape == (1, 3) and t.dtype == "float32"
    assert t.ndim == 2 and t.size == 3 and t.concrete_shape == (1, 3)
    assert tensor_type(5, "int32") == TensorType((5,), "int32")
    assert type_of_array(np.zeros((2, 2), "int8")) == TensorType((2, 2), "int8")
    assert TupleType([t, t]).fields == (t, t)


@pytest.mark.parametrize(
    ("shape", "dtype", "message"),
    [
        ((1, -2), "float32", "negative dimension"),
        (("a",), "float32", "sequence of ints"),
        ((1,), "floaty", "unknown dtype"),
    ],
)
def test_bad_types_are_named(shape, dtype, message) -> None:
    with pytest.raises(GraphError, match=message):
        TensorType(shape, dtype)
