"""How close a kernel's output must be to its numpy reference: one rule for tuning and apply.

The measure worker's check of each candidate (``measure.timing.compare_outputs``), ``apply``'s
check of the tuned kernels and networks (:func:`matches_reference`) and the template tests all
call :func:`scaled_tolerance`, so a config accepted while tuning is accepted when applied.  This
module imports nothing of the operators, so a measurement worker can use it without loading the
templates.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import ArrayLike, DTypeLike


def tolerance(dtype: DTypeLike) -> tuple[float, float]:
    """``(rtol, atol)`` for comparing a kernel output of ``dtype`` with its reference: exact for
    integers and booleans, 1e-3 for floats of 16 bits (eleven bits of mantissa), 1e-4 above."""
    kind = np.dtype(dtype).kind
    if kind != "f":
        return 0.0, 0.0
    return (1e-3, 1e-3) if np.dtype(dtype).itemsize <= 2 else (1e-4, 1e-4)


def scaled_tolerance(expected: np.ndarray, dtype: DTypeLike) -> tuple[float, float]:
    """``(rtol, atol)`` for comparing an output of ``dtype`` with its reference ``expected``:
    :func:`tolerance`, the absolute part scaled by the reference's largest magnitude, so that
    outputs far below 1 (a softmax over many classes) are compared as closely as outputs near 1,
    and sums that cancel to small values (Winograd's) as loosely as their terms."""
    rtol, atol = tolerance(dtype)
    scale = float(np.max(np.abs(expected))) if expected.size else 0.0
    return rtol, atol * (scale if np.isfinite(scale) and scale > 0 else 1.0)


def matches_reference(got: Sequence[np.ndarray], expected: Sequence[ArrayLike]) -> tuple[bool, float]:
    """Whether outputs equal their reference within :func:`scaled_tolerance`.

    Parameters
    ----------
    got : sequence of numpy.ndarray
        The outputs.
    expected : sequence of array-likes
        Their references, in order (cast to each output's dtype and shape).

    Returns
    -------
    tuple of (bool, float)
        Whether every output is close to its reference, and the largest absolute difference
        (infinite when the numbers of outputs differ).
    """
    if len(got) != len(expected):
        return False, float("inf")
    ok, worst = True, 0.0
    for a, b in zip(got, expected, strict=True):
        b = np.asarray(b, dtype=a.dtype).reshape(a.shape)
        if not a.size:
            continue
        rtol, atol = scaled_tolerance(b, a.dtype)
        worst = max(worst, float(np.max(np.abs(a.astype(np.float64) - b))))
        ok = ok and bool(np.allclose(a, b, rtol=rtol, atol=atol))
    return ok, worst
