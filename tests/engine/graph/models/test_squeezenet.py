"""SqueezeNet 1.1 built untuned: its fire modules' concatenations take the layout transform of an
input in their kernel where the blocks of their inputs differ, and the network computes what the
interpreter computes."""

from __future__ import annotations

import numpy as np

from tunecli.engine import graph as g
from tunecli.engine.graph.build_module import build
from tunecli.engine.graph.models import squeezenet
from tunecli.engine.graph.passes import PassContext
from tunecli.engine.target import Target


def test_built_untuned_it_computes_what_the_interpreter_computes(no_packages: None) -> None:
    mod, params = squeezenet.get_workload(version="1.1", image_shape=(3, 64, 64))
    data = np.random.default_rng(0).uniform(-1, 1, (1, 3, 64, 64)).astype("float32")
    expected = np.asarray(g.evaluate(mod, inputs={**params, "data": data}))
    with PassContext(opt_level=3):
        lib = build(mod, "llvm", params=params)
    m = lib["default"](None)
    m.set_input("data", data)
    m.run()
    np.testing.assert_allclose(m.get_output(0).numpy(), expected, rtol=1e-4, atol=1e-6)
    # with 32 vector registers the 3x3 (Winograd) expansions write the 1x1 ones' blocks (two vectors,
    # conv2d_nchwc.network_channel_block); with 16 wider ones: each concatenation converts them as it
    # copies; either way no kernel converts them alone
    wide = Target("llvm").vector_bits >= 512
    concats = [k for k in lib.kernels if "concatenate" in k]
    assert concats and all(("layout_transform_concatenate" in k) is not wide for k in concats)
    transforms = [k for k in lib.kernels if "layout_transform" in k and "concatenate" not in k]
    assert len(transforms) == 2, transforms  # the input's and the classifier's
