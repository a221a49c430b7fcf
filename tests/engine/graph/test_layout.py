"""Layout strings: parsing, shapes and array conversion."""

from __future__ import annotations

import numpy as np
import pytest

from tunecli.engine.graph.layout import convert_array, convert_shape, parse_layout, primal_axes
from tunecli.errors import GraphError


def test_parse_and_primal_axes() -> None:
    assert parse_layout("NCHW16c") == (("N", None), ("C", None), ("H", None), ("W", None), ("c", 16))
    assert primal_axes("OIHW8i16o") == "OIHW"


@pytest.mark.parametrize("bad", ["", "NCHc", "NCHW0c", "NCCW", "NC4HW", "NCHW16d", "NC-HW"])
def test_bad_layouts_are_named(bad) -> None:
    with pytest.raises(GraphError, match="layout"):
        parse_layout(bad)


def test_shapes_and_round_trips() -> None:
    assert convert_shape((1, 32, 7, 7), "NCHW", "NCHW8c") == (1, 4, 7, 7, 8)
    assert convert_shape((64, 32, 3, 3), "OIHW", "OIHW8i16o") == (4, 4, 3, 3, 8, 16)
    x = np.random.default_rng(0).standard_normal((2, 16, 3, 5)).astype("float32")
    for dst in ("NCHW4c", "NHWC", "NCHW16c", "HWCN"):
        there = convert_array(x, "NCHW", dst)
        assert there.shape == convert_shape(x.shape, "NCHW", dst)
        np.testing.assert_array_equal(convert_array(there, dst, "NCHW"), x)
    np.testing.assert_array_equal(
        convert_array(convert_array(x, "NCHW", "NCHW4c"), "NCHW4c", "NCHW8c"),
        convert_array(x, "NCHW", "NCHW8c"),
    )
