"""The weight in rows of output channels and the channel-row tiles the NCHW kernel-job templates share."""

from __future__ import annotations

import numpy as np
import pytest

from tunecli.engine import te
from tunecli.engine.ops import reference as ref
from tunecli.engine.ops.x86.conv2d_nchw_rows import (
    WEIGHT_TAG,
    baseline_inputs,
    conv2d_nchw_rows_python,
    pack_rows_weight,
    packed_weight,
    unpack_rows_weight,
)
from tunecli.errors import InstantiationError


@pytest.mark.parametrize(("window", "packed_shape"), [((3, 3), (4, 5, 3, 3, 2)), ((1, 1), (4, 5, 1, 1, 2))])
def test_a_weight_packed_in_rows_unpacks_to_itself_and_a_1x1_one_reshapes_to_the_gemms(
        window: tuple[int, int], packed_shape: tuple[int, ...]) -> None:
    weight = np.random.default_rng(0).standard_normal((8, 5, *window)).astype("float32")
    packed = pack_rows_weight(weight, 2)
    assert packed.shape == packed_shape
    assert packed[1, 3, 0, 0, 1] == weight[3, 3, 0, 0]  # channel row 1 of block 1: output channel 3
    np.testing.assert_array_equal(unpack_rows_weight(packed), weight)
    if window == (1, 1):  # the 1x1 GEMM's [CO/mr, CI, mr]
        np.testing.assert_array_equal(unpack_rows_weight(packed.reshape(4, 5, 2)), weight)


def test_the_reference_and_the_baseline_read_the_packed_weight() -> None:
    rng = np.random.default_rng(1)
    data = rng.standard_normal((1, 5, 9, 9)).astype("float32")
    weight = rng.standard_normal((8, 5, 3, 3)).astype("float32")
    packed = pack_rows_weight(weight, 4)
    np.testing.assert_allclose(conv2d_nchw_rows_python(data, packed, 2, 1),
                               ref.conv2d_nchw_python(data, weight, 2, 1), rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(baseline_inputs(data, packed)[1], weight)


def test_an_oihw_weight_is_packed_by_a_stage_and_a_packed_one_must_have_the_configs_rows() -> None:
    oihw = te.placeholder((8, 5, 3, 3), name="w")
    stage = packed_weight(oihw, 4, "t")
    assert tuple(int(d) for d in stage.shape) == (2, 5, 3, 3, 4) and stage.op.tag == WEIGHT_TAG
    one = te.placeholder((8, 5, 1, 1), name="w1")
    assert tuple(int(d) for d in packed_weight(one, 4, "t", squeeze=True).shape) == (2, 5, 4)
    rows = te.placeholder((2, 5, 4), name="p")
    assert packed_weight(rows, 4, "t") is rows
    with pytest.raises(InstantiationError, match="t: the kernel is packed in rows of 4, the config's are 8"):
        packed_weight(rows, 8, "t")
