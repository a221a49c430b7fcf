"""The shape rule of 2-D window ops, as TVM's ``get_pad_tuple`` and ``conv2d`` shape functions."""

import pytest

from tunecli.engine.te.window import conv2d_output_shape, get_pad_tuple, pair, pool2d_output_shape
from tunecli.errors import ExprError


def test_get_pad_tuple_matches_tvm():
    assert get_pad_tuple(1, (3, 3)) == (1, 1, 1, 1)
    assert get_pad_tuple((1, 2), (3, 3)) == (1, 2, 1, 2)
    assert get_pad_tuple((1, 2, 3, 4), (3, 3)) == (1, 2, 3, 4)
    assert get_pad_tuple("SAME", (4, 3)) == (2, 1, 1, 1)
    assert get_pad_tuple("VALID", (4, 3)) == (0, 0, 0, 0)


def test_output_shape_and_padding() -> None:
    assert conv2d_output_shape((56, 56), (3, 3), 1, 1, 1) == (56, 56, (1, 1, 1, 1))
    assert conv2d_output_shape((224, 224), (7, 7), 2, 3, 1) == (112, 112, (3, 3, 3, 3))
    assert conv2d_output_shape((14, 14), (3, 3), (1, 1), "SAME", (2, 2)) == (14, 14, (2, 2, 2, 2))
    assert conv2d_output_shape((7, 7), (1, 1), [2, 2], [0, 0, 0, 0], [1, 1])[:2] == (4, 4)


@pytest.mark.parametrize("stride, padding, dilation", [(0, 0, 1), (1, 0, 0), (1, -1, 1), ((1, 2, 3), 0, 1)])
def test_bad_arguments(stride, padding, dilation) -> None:
    with pytest.raises(ExprError):
        conv2d_output_shape((8, 8), (3, 3), stride, padding, dilation)


def test_window_larger_than_input() -> None:
    with pytest.raises(ExprError, match="does not fit"):
        conv2d_output_shape((2, 2), (3, 3), 1, 0, 1)


def test_a_pool_shapes_like_a_convolution_and_ceil_mode_adds_the_partial_window() -> None:
    assert pool2d_output_shape((112, 112), 3, 2, 1, 1) == conv2d_output_shape((112, 112), (3, 3), 2, 1, 1)
    assert pool2d_output_shape((5, 5), (2, 2), 2, 0, 1) == (2, 2, (0, 0, 0, 0))
    assert pool2d_output_shape((5, 5), (2, 2), 2, 0, 1, ceil_mode=True) == (3, 3, (0, 0, 0, 0))
    assert pool2d_output_shape((6, 6), (2, 2), 2, 0, 1, ceil_mode=True)[:2] == (3, 3)  # no partial window
    with pytest.raises(ExprError, match="does not fit"):
        pool2d_output_shape((2, 2), 3, 1, 0, 1, ceil_mode=True)


def test_pair() -> None:
    assert pair(3, "stride") == (3, 3)
    assert pair([1, 2], "stride") == (1, 2)
    with pytest.raises(ExprError, match="stride must be an int or a pair"):
        pair(True, "stride")
