"""TVM's ``tvm.testing`` helpers that user programs call: :func:`assert_allclose`."""

from __future__ import annotations

from typing import Any

import numpy as np


def assert_allclose(actual: Any, desired: Any, rtol: float = 1e-7, atol: float = 1e-7) -> None:
    """Assert ``actual`` and ``desired`` have the same shape and are close (TVM's defaults).

    Accepts numpy arrays, :class:`tunecli.nd.NDArray` and anything ``numpy.asarray`` takes.
    """
    actual = np.asarray(actual)
    desired = np.asarray(desired)
    np.testing.assert_allclose(actual.shape, desired.shape)
    np.testing.assert_allclose(actual, desired, rtol=rtol, atol=atol, verbose=True)


__all__ = ["assert_allclose"]
