"""Transformer blocks exported by PyTorch import, build with relay.build and give onnxruntime's
and PyTorch's outputs: a BERT layer with a padding mask, a GPT-2 causal block, causal
scaled-dot-product attention, ViT's patch embedding; a symbolic sequence length is given at
import."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")
torch = pytest.importorskip("torch")

from tunecli.engine.graph import count_calls  # noqa: E402
from tunecli.engine.graph.frontend import from_onnx  # noqa: E402
from tunecli.errors import ModelImportError  # noqa: E402

from .onnx_models import built_outputs, onnxruntime_outputs, randn  # noqa: E402
from .torch_blocks import (  # noqa: E402
    CausalBlock,
    CausalSDPA,
    Encoder,
    MaskedFillAttention,
    PatchEmbedding,
    export,
    torch_outputs,
)


def _token_inputs(seq: int = 8) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(1)
    mask = np.ones((2, seq), dtype="int64")
    mask[1, seq - 3 :] = 0  # the second sequence is padded
    return {"ids": rng.integers(0, 50, (2, seq)).astype("int64"), "mask": mask}


def _built(mod, params, inputs) -> np.ndarray:
    return built_outputs(mod, params, inputs)[0]


BLOCKS = {
    "bert-layer-padding-mask": (Encoder, _token_inputs),
    "distilbert-masked-fill": (MaskedFillAttention, _token_inputs),
    "gpt2-causal-block": (CausalBlock, lambda: {"x": randn(2, 8, 16)}),
    "causal-sdpa": (CausalSDPA, lambda: {name: randn(1, 2, 8, 4) for name in "qkv"}),
    "vit-patch-embedding": (PatchEmbedding, lambda: {"images": randn(2, 3, 16, 16)}),
}


@pytest.mark.parametrize("name", sorted(BLOCKS))
def test_exported_block_builds_and_matches_onnxruntime_and_torch(name: str) -> None:
    make_module, make_inputs = BLOCKS[name]
    torch.manual_seed(0)
    module, inputs = make_module(), make_inputs()
    model = export(module, inputs)
    mod, params = from_onnx(model)
    _check_block(module, model, mod, params, inputs)


@pytest.mark.parametrize("opset", [13, 14])
def test_layer_norm_decomposed_by_older_opsets(opset: int) -> None:
    """Before opset 17 exporters spell layer normalisation as ReduceMean, Sub, Pow, Sqrt, Add, Div."""
    torch.manual_seed(0)
    module, inputs = Encoder(), _token_inputs()
    model = export(module, inputs, opset=opset)
    kinds = {n.op_type for n in model.graph.node}
    assert "LayerNormalization" not in kinds and {"ReduceMean", "Pow", "Sqrt", "Div"} <= kinds
    mod, params = from_onnx(model)
    _check_block(module, model, mod, params, inputs)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["bert-layer-padding-mask", "gpt2-causal-block"])
def test_dynamo_exporter_opset_20_gelu(name: str) -> None:
    """torch's default (dynamo) exporter writes opset 20, with Gelu as one operator."""
    pytest.importorskip("onnxscript")
    make_module, make_inputs = BLOCKS[name]
    torch.manual_seed(0)
    module, inputs = make_module().eval(), make_inputs()
    args = tuple(torch.from_numpy(v) for v in inputs.values())
    model = torch.onnx.export(module, args, input_names=list(inputs), dynamo=True, verbose=False).model_proto
    assert "Gelu" in {n.op_type for n in model.graph.node}
    mod, params = from_onnx(model)
    _check_block(module, model, mod, params, inputs)


def _check_block(module, model, mod, params, inputs) -> None:
    got = _built(mod, params, inputs)
    (expected,) = onnxruntime_outputs(model, inputs)
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(got, torch_outputs(module, inputs)[0], rtol=1e-4, atol=1e-5)


def test_padding_mask_hides_the_padded_tokens() -> None:
    """The padded positions of a sequence do not change the outputs at its real positions."""
    torch.manual_seed(0)
    module, inputs = Encoder(), _token_inputs()
    mod, params = from_onnx(export(module, inputs))
    changed = {**inputs, "ids": inputs["ids"].copy()}
    changed["ids"][1, -3:] = (changed["ids"][1, -3:] + 7) % 50
    first, second = _built(mod, params, inputs), _built(mod, params, changed)
    np.testing.assert_allclose(first[1, :-3], second[1, :-3], rtol=1e-5, atol=1e-6)
    assert not np.allclose(first[1, -3:], second[1, -3:])


def test_layer_norm_and_attention_products_become_graph_operators() -> None:
    torch.manual_seed(0)
    inputs = _token_inputs()
    mod, _ = from_onnx(export(Encoder(), inputs))
    counts = count_calls(mod["main"])
    assert counts["nn.layer_norm"] == 3
    assert counts["nn.batch_matmul"] == 2
    assert counts["take"] == 1  # the token lookup; the position lookup folds (its ids are an arange)
    assert counts["erf"] == 1


def test_symbolic_sequence_length_is_given_at_import() -> None:
    torch.manual_seed(0)
    module = Encoder()
    axes = {"ids": {0: "batch", 1: "sequence"}, "mask": {0: "batch", 1: "sequence"}}
    model = export(module, _token_inputs(8), dynamic_axes=axes)
    with pytest.raises(ModelImportError, match=r"input 'ids' has a dynamic dimension 0 \('batch'\); give its "
                                               r"shape: from_onnx\(model, shape=\{'ids': \(\.\.\.\)\}\)"):
        from_onnx(model)
    inputs = _token_inputs(12)  # another length than the export's
    mod, params = from_onnx(model, shape={name: value.shape for name, value in inputs.items()})
    (expected,) = onnxruntime_outputs(model, inputs)
    np.testing.assert_allclose(_built(mod, params, inputs), expected, rtol=1e-4, atol=1e-5)


def test_range_of_parameters_becomes_an_arange() -> None:
    """With ``freeze_params=False`` a Range of float initializers is not folded: it is computed by
    the graph's ``arange`` (its bounds read at import) and built."""
    from onnx import helper

    from .onnx_models import make_model

    nodes = [helper.make_node("Range", ["s", "l", "d"], ["r"]), helper.make_node("Mul", ["x", "r"], ["y"])]
    bounds = {"s": np.float32(0.5), "l": np.float32(3.0), "d": np.float32(0.5)}
    model = make_model(nodes, {"x": ((5,), "float32")}, {"y": "float32"}, bounds)
    inputs = {"x": randn(5)}
    mod, params = from_onnx(model, freeze_params=False)
    assert count_calls(mod["main"])["arange"] == 1
    (expected,) = onnxruntime_outputs(model, inputs)
    np.testing.assert_allclose(_built(mod, params, inputs), expected, rtol=1e-6)
