"""SqueezeNet 1.1 built untuned: its fire modules' concatenations take the layout transform of an
input in their kernel, and the network computes what the interpreter computes."""

from __future__ import annotations

import numpy as np

from tunecli.engine import graph as g
from tunecli.engine.graph.build_module import build
from tunecli.engine.graph.models import squeezenet
from tunecli.engine.graph.passes import PassContext


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
    # the 3x3 (Winograd) expansions write wider channel blocks than the 1x1 ones: each concatenation
    # converts them as it copies, and no kernel converts them alone
    concats = [k for k in lib.kernels if "concatenate" in k]
    assert concats and all("layout_transform_concatenate" in k for k in concats)
    transforms = [k for k in lib.kernels if "layout_transform" in k and "concatenate" not in k]
    assert len(transforms) == 2, transforms  # the input's and the classifier's
