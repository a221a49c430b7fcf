"""Comparing outputs with their reference: the tolerance follows the outputs' magnitude."""

from __future__ import annotations

import numpy as np
import pytest

from tunecli.engine import graph as g
from tunecli.engine.graph.build_module import build
from tunecli.engine.graph.models import resnet
from tunecli.engine.graph.passes import PassContext
from tunecli.engine.ops.tolerance import matches_reference, tolerance


def test_outputs_far_below_one_are_compared_relative_to_their_scale() -> None:
    expected = np.full((1, 1000), 1e-3, dtype="float32")
    ok, worst = matches_reference([expected * (1 + 1e-6)], [expected])
    assert ok and 0 < worst < 2e-9
    wrong = expected.copy()
    wrong[0, 7] *= 1.05
    assert not matches_reference([wrong], [expected])[0]
    assert matches_reference([np.zeros(3, "float32")], [np.zeros(3)])[0]
    assert matches_reference([expected], [expected, expected]) == (False, float("inf"))
    assert tolerance("int32") == (0.0, 0.0) and not matches_reference([np.arange(3)], [[0, 1, 3]])[0]


@pytest.mark.slow
def test_a_built_network_with_a_perturbed_parameter_is_detected() -> None:
    """resnet-18's softmax outputs are about 1e-3 each: a 1 % error in one class's bias changes
    that output by about 1e-5, which an absolute tolerance of 1e-4 would not see."""
    mod, params = resnet.get_workload(num_layers=18, batch_size=1, image_shape=(3, 32, 32))
    with PassContext(opt_level=3):
        lib = build(mod, "llvm", params=params)
    data = np.random.default_rng(0).uniform(-1, 1, (1, 3, 32, 32)).astype("float32")
    run = lib["default"](None)
    run.set_input("data", data)
    run.run()
    got = run.get_output(0).numpy()
    assert float(got.max()) < 1e-2
    assert matches_reference([got], [g.evaluate(mod, [data], params)])[0]

    bias = params["fc1_bias"].numpy()
    perturbed = {**params, "fc1_bias": (bias + 0.01 * (np.arange(bias.size) == 3)).astype(bias.dtype)}
    reference = g.evaluate(mod, [data], perturbed)
    assert np.allclose(got, reference, rtol=1e-4, atol=1e-4)  # the check before scaling its atol
    ok, worst = matches_reference([got], [reference])
    assert not ok and worst > 1e-6
