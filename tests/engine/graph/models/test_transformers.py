"""The built-in transformers (bert, gpt2, vit) at reduced sizes: written as ONNX they compute in
onnxruntime what the interpreter computes, and built with relay.build they give the same; at full
size (slow) they have the published parameter counts and shapes."""

from __future__ import annotations

import numpy as np
import pytest

from tunecli import relay
from tunecli.engine.graph import OPS, count_calls, evaluate
from tunecli.engine.graph.models import bert, gpt2, vit
from tunecli.engine.graph.passes import PassContext
from tunecli.errors import GraphError

RNG = np.random.default_rng(0)

#: name -> (reduced network, its input)
REDUCED = {
    "bert": (lambda: bert.get_workload(num_layers=2, seq_len=8, hidden=32, heads=4, ff=64, vocab_size=100),
             lambda: RNG.integers(0, 100, (1, 8))),
    "gpt2": (lambda: gpt2.get_workload(batch_size=2, num_layers=2, seq_len=8, hidden=32, heads=4,
                                       vocab_size=100),
             lambda: RNG.integers(0, 100, (2, 8))),
    "vit": (lambda: vit.get_workload(image_size=32, patch_size=8, num_layers=2, hidden=32, heads=4, ff=64,
                                     num_classes=10),
            lambda: RNG.standard_normal((1, 3, 32, 32)).astype("float32")),
}


def _relative_error(got: np.ndarray, expected: np.ndarray) -> float:
    return float(np.abs(got - expected).max() / np.abs(expected).max())


@pytest.mark.parametrize("name", sorted(REDUCED))
def test_reduced_transformer_matches_onnxruntime_and_builds(name: str) -> None:
    pytest.importorskip("onnx")
    onnxruntime = pytest.importorskip("onnxruntime")
    from tunecli.engine.graph.frontend.onnx_export import to_onnx

    make, make_data = REDUCED[name]
    mod, params = make()
    data = make_data()
    expected = np.asarray(evaluate(mod, inputs={**params, "data": data}))
    session = onnxruntime.InferenceSession(to_onnx(mod, params), providers=["CPUExecutionProvider"])
    [from_onnxruntime] = session.run(None, {"data": data})
    assert _relative_error(from_onnxruntime, expected) < 1e-4
    with PassContext(opt_level=3):
        lib = relay.build(mod, target="llvm", params=params)
    m = lib["default"](None)
    m.set_input("data", data)
    m.run()
    assert _relative_error(m.get_output(0).numpy(), expected) < 1e-4


def test_gpt2_is_causal() -> None:
    """Changing a later token leaves the logits of the earlier positions as they were."""
    mod, params = REDUCED["gpt2"][0]()
    data = RNG.integers(0, 100, (2, 8))
    changed = data.copy()
    changed[:, 5:] = (changed[:, 5:] + 1) % 100
    first, second = (np.asarray(evaluate(mod, inputs={**params, "data": d})) for d in (data, changed))
    np.testing.assert_allclose(first[:, :5], second[:, :5], rtol=1e-6)
    assert not np.allclose(first[:, 5:], second[:, 5:])


def test_layers_are_the_graph_operators_transformers_import_as() -> None:
    mod, _ = REDUCED["bert"][0]()
    counts = count_calls(mod["main"])
    assert counts["nn.dense"] == 2 * 6 and counts["nn.batch_matmul"] == 2 * 2
    assert counts["nn.layer_norm"] == 1 + 2 * 2 and counts["erf"] == 2 and counts["take"] == 1
    assert OPS.get("nn.batch_matmul").strategy_op == "batch_matmul"


def test_sizes_are_checked() -> None:
    with pytest.raises(GraphError, match="hidden 30 must be a multiple of heads 4"):
        bert.get_workload(hidden=30, heads=4, num_layers=1)
    with pytest.raises(GraphError, match="patch_size 7 must divide image_size 32"):
        vit.get_workload(image_size=32, patch_size=7, num_layers=1)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("make", "count", "data_shape", "out_shape"),
    [
        (lambda: bert.get_workload(), 108.9e6, (1, 128), (1, 128, 768)),
        (lambda: gpt2.get_workload(), 123.7e6, (1, 128), (1, 128, 50257)),
        (lambda: vit.get_workload(), 86.6e6, (1, 3, 224, 224), (1, 1000)),
    ],
    ids=["bert-base", "gpt2", "vit-b16"],
)
def test_full_size_networks(make, count: float, data_shape: tuple, out_shape: tuple) -> None:
    mod, params = make()
    total = sum(int(np.prod(v.shape)) for v in params.values())
    assert abs(total - count) / count < 0.01
    fn = mod["main"]
    data = next(p for p in fn.params if p.name_hint == "data")
    assert tuple(data.checked_type.shape) == data_shape
    assert tuple(fn.body.checked_type.shape) == out_shape
