"""TVM's ``tvm.testing`` helpers that user programs and tests call: :func:`assert_allclose` and the
``requires_x86`` marker."""

from __future__ import annotations

import platform
from collections.abc import Callable
from typing import TypeVar

import numpy as np
import numpy.typing as npt

_F = TypeVar("_F", bound=Callable[..., object])


def assert_allclose(actual: npt.ArrayLike, desired: npt.ArrayLike, rtol: float = 1e-7,
                    atol: float = 1e-7) -> None:
    """Assert ``actual`` and ``desired`` have the same shape and are close (TVM's defaults).

    Accepts numpy arrays, :class:`tunecli.nd.NDArray` and anything ``numpy.asarray`` takes.
    """
    actual = np.asarray(actual)
    desired = np.asarray(desired)
    np.testing.assert_allclose(actual.shape, desired.shape)
    np.testing.assert_allclose(actual, desired, rtol=rtol, atol=atol, verbose=True)


def _is_x86() -> bool:
    return platform.machine().lower() in ("x86_64", "amd64", "i386", "i686", "x86")


def requires_x86(func: _F) -> _F:
    """Mark a test as needing an x86 host (TVM's ``tvm.testing.requires_x86``): under pytest it is
    skipped elsewhere; called directly it runs."""
    import pytest  # imported when used: user programs need not have pytest

    reason = f"needs an x86 host; this one is {platform.machine()}"
    return pytest.mark.skipif(not _is_x86(), reason=reason)(func)


__all__ = ["assert_allclose", "requires_x86"]
