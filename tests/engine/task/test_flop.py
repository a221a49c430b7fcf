"""FLOP counting walks te compute ops as TVM's compute_flop does."""

from __future__ import annotations

import pytest

from tunecli.engine import te
from tunecli.engine.schedule import create_schedule
from tunecli.engine.task.flop import FlopCalculationError, compute_flop


def test_matmul_is_two_nlm() -> None:
    n, l, m = 8, 16, 4
    A = te.placeholder((n, l), name="A")
    B = te.placeholder((l, m), name="B")
    k = te.reduce_axis((0, l), name="k")
    C = te.compute((n, m), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    assert compute_flop(create_schedule(C.op)) == 2 * n * l * m
    assert compute_flop([C]) == compute_flop(C.op) == 2 * n * l * m


def test_conv2d_is_two_n_co_oh_ow_ci_kh_kw() -> None:
    N, CI, H, W, CO, KH, KW = 1, 3, 6, 6, 4, 3, 3
    data = te.placeholder((N, CI, H, W), name="data")
    kernel = te.placeholder((CO, CI, KH, KW), name="kernel")
    rc = te.reduce_axis((0, CI), name="rc")
    ry = te.reduce_axis((0, KH), name="ry")
    rx = te.reduce_axis((0, KW), name="rx")
    conv = te.compute((N, CO, H - 2, W - 2), lambda n, f, y, x: te.sum(
        data[n, rc, y + ry, x + rx] * kernel[f, rc, ry, rx], axis=[rc, ry, rx]), name="conv")
    assert compute_flop([conv]) == 2 * N * CO * (H - 2) * (W - 2) * CI * KH * KW


def test_max_pool_counts_one_per_window_element() -> None:
    data = te.placeholder((1, 2, 8, 8), name="data")
    ry = te.reduce_axis((0, 2), name="ry")
    rx = te.reduce_axis((0, 2), name="rx")
    pool = te.compute((1, 2, 4, 4),
                      lambda n, c, y, x: te.max(data[n, c, y * 2 + ry, x * 2 + rx], axis=[ry, rx]),
                      name="pool")
    assert compute_flop([pool]) == 1 * 2 * 4 * 4 * 2 * 2


def test_chained_ops_and_select() -> None:
    A = te.placeholder((10,), name="A")
    B = te.compute((10,), lambda i: A[i] * 2.0 + 1.0, name="B")
    C = te.compute((10,), lambda i: te.if_then_else(B[i] > 0.0, B[i] * B[i], B[i]), name="C")
    # B: 2 per element; C: compare 1 + max(mul 1, 0) = 2 per element
    assert compute_flop([C]) == 10 * 2 + 10 * 2


def test_zero_flops_is_an_error_naming_add_flop() -> None:
    A = te.placeholder((10,), name="A")
    B = te.compute((10,), lambda i: A[i], name="B")
    with pytest.raises(FlopCalculationError, match="cfg.add_flop"):
        compute_flop([B])
