"""exp, tanh and sigmoid of float32 vectors: every lane at once, within a few ulp of numpy."""

from __future__ import annotations

import re

import numpy as np
import pytest

import tunecli
from tunecli import te

N = 4096
SPECIAL = [np.inf, -np.inf, np.nan, 0.0, -0.0, 1e-30, -1e-30, 88.72, 88.73, -87.3, -103.9, -104.0, 0.6249,
           0.625, -0.6251, 9.0, -9.0, 44.0, -44.0]


def vector_kernel(name: str, lanes: int = 16):
    """The elementwise ``te.<name>`` of 4096 float32 values, vectorized ``lanes`` wide, built for llvm."""
    a = te.placeholder((N,), name="A")
    b = te.compute((N,), lambda i: getattr(te, name)(a[i]), name="B")
    s = te.create_schedule(b.op)
    _, inner = s[b].split(b.op.axis[0], lanes)
    s[b].vectorize(inner)
    return tunecli.build(s, [a, b], "llvm")


def inputs() -> np.ndarray:
    rng = np.random.default_rng(0)
    wide = np.linspace(-110.0, 100.0, N // 2)
    near = rng.normal(0.0, 2.0, N // 2 - len(SPECIAL))
    return np.concatenate([wide, near, SPECIAL]).astype("float32")


def reference(name: str, x: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore"):
        if name == "sigmoid":  # in float32 as the kernel computes it: exp(101) overflows to inf
            return (1.0 / (1.0 + np.exp(-x))).astype("float32")
        return getattr(np, name)(x.astype("float64")).astype("float32")


@pytest.mark.parametrize("name", ["exp", "tanh", "sigmoid"])
@pytest.mark.parametrize("lanes", [4, 8, 16])
def test_vector_math_matches_numpy(name: str, lanes: int) -> None:
    x = inputs()
    y = np.full_like(x, 7.0)
    vector_kernel(name, lanes)(x, y)
    expected = reference(name, x)
    np.testing.assert_allclose(y, expected, rtol=2e-6, atol=1e-44, equal_nan=True)
    assert np.array_equal(np.signbit(y[x == 0]), np.signbit(expected[x == 0]))  # -0.0 stays -0.0


@pytest.mark.parametrize("name", ["exp", "tanh", "sigmoid"])
def test_vector_math_is_simd_not_libm_per_lane(name: str, tmp_path) -> None:
    asm = tmp_path / "k.s"
    vector_kernel(name).save(str(asm))
    calls = re.findall(r"call\w*\s+(\S+)", asm.read_text())
    assert not [c for c in calls if re.search(r"exp|tanh", c)], calls


@pytest.mark.parametrize("cpu", ["znver3", "skylake-avx512"])
def test_exp_of_16_lanes_scales_by_vscalefps_on_avx512_only_and_matches_numpy(cpu: str, tmp_path) -> None:
    a = te.placeholder((N,), name="A")
    b = te.compute((N,), lambda i: te.exp(a[i]), name="B")
    s = te.create_schedule(b.op)
    _, inner = s[b].split(b.op.axis[0], 16)
    s[b].vectorize(inner)
    kernel = tunecli.build(s, [a, b], f"llvm -mcpu={cpu}")
    asm = tmp_path / "k.s"
    kernel.save(str(asm))
    assert ("vscalefps" in asm.read_text()) == (cpu == "skylake-avx512")
    x = inputs()
    y = np.full_like(x, 7.0)
    kernel(x, y)
    np.testing.assert_allclose(y, reference("exp", x), rtol=2e-6, atol=1e-44, equal_nan=True)
