"""erf of float32 vectors: every lane at once (no libm call per lane), within 3.5e-7 of erf (about six
float32 steps just below 1)."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

from .test_codegen_vector_math import vector_kernel

SPECIAL = [0.0, -0.0, 1e-30, -1e-30, 0.9999999, 1.0, -1.0, 1.0000001, 3.9999998, 4.0, -4.0, 9.0, -9.0,
           np.inf, -np.inf, np.nan]


def erf_inputs() -> np.ndarray:
    rng = np.random.default_rng(0)
    dense = np.linspace(-5.0, 5.0, 3000)
    near = rng.normal(0.0, 1.5, 4096 - len(dense) - len(SPECIAL))
    return np.concatenate([dense, near, SPECIAL]).astype("float32")


@pytest.mark.parametrize("lanes", [4, 8, 16])
def test_vector_erf_is_within_3_5e7_of_erf(lanes: int) -> None:
    x = erf_inputs()
    y = np.full_like(x, 7.0)
    vector_kernel("erf", lanes)(x, y)
    expected = np.array([math.erf(v) if not np.isnan(v) else np.nan for v in x.astype("float64")])
    np.testing.assert_allclose(y, expected, rtol=0, atol=3.5e-7, equal_nan=True)
    assert np.all(np.abs(y[~np.isnan(y)]) <= 1.0)
    assert np.array_equal(np.signbit(y[x == 0]), np.signbit(x[x == 0]))  # erf is odd: -0.0 stays -0.0


def test_vector_erf_is_simd_not_libm_per_lane(tmp_path) -> None:
    asm = tmp_path / "k.s"
    vector_kernel("erf").save(str(asm))
    calls = re.findall(r"call\w*\s+(\S+)", asm.read_text())
    assert not [c for c in calls if "erf" in c], calls
