"""apply_network's check of a network against its reference."""

from __future__ import annotations

import numpy as np

from tunecli.engine.actions.apply_network import _nearly_constant


def test_a_nearly_constant_reference_makes_the_check_uninformative() -> None:
    uniform = np.full((1, 1000), 1e-3, dtype="float32")
    uniform[0, 0] += 1e-12  # a uniform softmax, as relay.testing's MobileNet gives
    assert _nearly_constant(uniform)
    varied = np.random.default_rng(0).uniform(size=(1, 1000)).astype("float32")
    assert not _nearly_constant(varied / varied.sum())
    assert _nearly_constant(np.zeros((0,), dtype="float32"))
