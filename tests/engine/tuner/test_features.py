"""Cost-model features: knob vectors per index, loop-nest (itervar) and curve features."""

from __future__ import annotations

import numpy as np
import pytest

from tests.engine import autotvm_templates  # noqa: F401 - registers the templates
from tunecli.engine.task.knob_features import knob_features
from tunecli.engine.task.space import ConfigSpace
from tunecli.engine.task.space_entities import VirtualAxis
from tunecli.engine.task.task import create
from tunecli.engine.tuner.features import get_features
from tunecli.errors import SpaceError


def test_knob_features_equal_flatten_feature_for_every_index() -> None:
    cfg = ConfigSpace()
    axes = [VirtualAxis(4), VirtualAxis(4)]
    cfg.define_split("tile", 16, num_outputs=3)
    cfg.define_reorder("re", axes, "all")
    cfg.define_annotate("an", axes, "try_unroll_vec")
    cfg.define_knob("ot", [0, 512, "x"])
    indices = list(range(cfg.range_length))
    table = knob_features(cfg, indices)
    assert table.shape == (len(indices), 3 + 2 + 22 + 1)
    for i in indices[::7]:
        np.testing.assert_array_equal(table[i], cfg.get(i).get_flatten_feature())


def test_itervar_features_follow_the_loop_nest() -> None:
    task = create("autotvm_test/matmul", (32, 32, 32, "float32"), "llvm")
    fea = get_features(task, [0, 1, 35], "itervar")
    assert fea.shape[0] == 3 and fea.shape[1] > 20
    assert not np.array_equal(fea[0], fea[1]) and not np.array_equal(fea[1], fea[2])
    # the first loop of config 0 (tile 1) is i.outer with extent 32: log2(1 + 32)
    assert fea[0][0] == pytest.approx(np.log2(33))


def test_curve_features_have_a_fixed_length() -> None:
    task = create("autotvm_test/matmul", (32, 32, 32, "float32"), "llvm")
    fea = get_features(task, [0, 7, 20], "curve")
    assert fea.shape == (3, 3 * 40)
    assert np.all(np.isfinite(fea))


def test_invalid_feature_type() -> None:
    task = create("autotvm_test/matmul", (8, 8, 8, "float32"), "llvm")
    with pytest.raises(SpaceError, match="Invalid feature type"):
        get_features(task, [0], "nope")
