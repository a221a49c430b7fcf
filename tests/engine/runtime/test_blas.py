"""numpy's BLAS threads: told through the library's own entry points, restored after a block."""

from __future__ import annotations

import pytest

from tunecli.engine.runtime.blas import get_blas_threads, set_blas_threads, single_blas_thread


def test_single_blas_thread_restores_the_thread_count() -> None:
    before = get_blas_threads()
    if before == 0:
        pytest.skip("numpy's BLAS exposes no thread-count getter")
    with single_blas_thread():
        assert get_blas_threads() == 1
    assert get_blas_threads() == before


def test_the_thread_count_can_be_set() -> None:
    before = get_blas_threads()
    if before == 0:
        pytest.skip("numpy's BLAS exposes no thread-count getter")
    try:
        assert set_blas_threads(1) and get_blas_threads() == 1
    finally:
        set_blas_threads(before)
