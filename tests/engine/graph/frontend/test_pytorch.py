"""relay.frontend.from_pytorch: a traced module imported through torch's ONNX exporter builds and
gives PyTorch's outputs; bad arguments and a missing PyTorch get one clear error."""

from __future__ import annotations

import sys

import numpy as np
import pytest

pytest.importorskip("onnx")
torch = pytest.importorskip("torch")

from tunecli import relay  # noqa: E402
from tunecli.errors import ModelImportError  # noqa: E402

from .onnx_models import built_outputs  # noqa: E402
from .torch_blocks import Encoder, PatchEmbedding  # noqa: E402


def _run(mod, params, inputs) -> np.ndarray:
    return built_outputs(mod, params, inputs)[0]


def test_traced_encoder_matches_torch_with_weights_as_params() -> None:
    torch.manual_seed(0)
    ids = torch.randint(0, 50, (1, 8))
    mask = torch.ones(1, 8, dtype=torch.int64)
    mask[0, 6:] = 0
    module = Encoder().eval()
    traced = torch.jit.trace(module, (ids, mask))
    infos = [("ids", ((1, 8), "int64")), ("mask", ((1, 8), "int64"))]
    mod, params = relay.frontend.from_pytorch(traced, infos)
    assert params and all(name in {p.name_hint for p in mod["main"].params} for name in params)
    with torch.no_grad():
        expected = module(ids, mask).numpy()
    got = _run(mod, params, {"ids": ids.numpy(), "mask": mask.numpy()})
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-5)


def test_plain_module_with_default_dtype_and_frozen_weights() -> None:
    torch.manual_seed(0)
    module = PatchEmbedding().eval()
    images = torch.randn(1, 3, 16, 16)
    mod, params = relay.frontend.from_pytorch(module, [("images", (1, 3, 16, 16))], freeze_params=True)
    assert params == {}
    with torch.no_grad():
        expected = module(images).numpy()
    np.testing.assert_allclose(_run(mod, params, {"images": images.numpy()}), expected, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize(
    ("module", "infos", "message"),
    [
        (lambda: 42, [("x", (1,))], "expected a torch.jit.ScriptModule or torch.nn.Module, got int"),
        (lambda: torch.nn.ReLU(), "x", "input_infos must be a list of"),
        (lambda: torch.nn.ReLU(), [("x",)], r"input_infos\[0\] = \('x',\): expected \(name, shape\)"),
        (lambda: torch.nn.ReLU(), [("x", (2,)), ("x", (2,))], "repeat a name"),
        (lambda: torch.nn.Hardswish(), [("x", (1, 4, 5))], "HardSwish node .*operator not supported"),
        (lambda: torch.nn.ReLU(), [("x", ((1, "T"), "float32"))],
         r"the shape's dimensions integers \(a dynamic dimension is given the size to build for\)"),
        (lambda: torch.nn.ReLU(), [],
         r"the module's forward takes input \(1 input\); input_infos gives 0: \[\]"),
        (lambda: torch.jit.trace(torch.nn.ReLU(), torch.zeros(2)), [("a", (2,)), ("b", (2,))],
         r"forward takes input \(1 input\); input_infos gives 2: \['a', 'b'\]"),
        (lambda: torch.nn.Embedding(5, 2), [("ids", (1, 3))],
         r"cannot export the module on inputs ids float32\[1, 3\] "
         r"\(a dtype other than 'float32' is given as"),
    ],
)
def test_bad_arguments_get_one_clear_error(module, infos, message: str) -> None:
    with pytest.raises(ModelImportError, match=message):
        relay.frontend.from_pytorch(module(), infos)


class _Wrapped(torch.nn.Module):
    def __init__(self, attention: torch.nn.MultiheadAttention):
        super().__init__()
        self.attention = attention

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.attention(x, x, x, need_weights=False)[0]


class _Tiled(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.tile(1, 2) + x.sum(-1, keepdim=True).tile(1, 1, 6)


def test_tile_as_torch_exports_it_with_size_and_if() -> None:
    x = torch.randn(2, 3, 3)
    mod, params = relay.frontend.from_pytorch(torch.jit.trace(_Tiled(), x), [("x", (2, 3, 3))])
    np.testing.assert_allclose(_run(mod, params, {"x": x.numpy()}), _Tiled()(x).numpy(), rtol=1e-5, atol=1e-6)


def test_a_layer_only_the_dynamo_exporter_exports() -> None:
    torch.manual_seed(0)
    layer = torch.nn.TransformerEncoderLayer(16, 2, 32, batch_first=True, dropout=0.0).eval()
    x = torch.randn(1, 6, 16)
    mod, params = relay.frontend.from_pytorch(layer, [("x", (1, 6, 16))])
    with torch.no_grad():
        expected = layer(x).numpy()
    np.testing.assert_allclose(_run(mod, params, {"x": x.numpy()}), expected, rtol=1e-4, atol=1e-5)


def test_a_traced_layer_torch_cannot_export_says_to_pass_the_module() -> None:
    attention = torch.nn.MultiheadAttention(16, 2, batch_first=True).eval()
    x = torch.randn(1, 6, 16)
    traced = torch.jit.trace(_Wrapped(attention), x, check_trace=False)
    with pytest.raises(ModelImportError, match="nn.MultiheadAttention among them: pass the nn.Module itself"):
        relay.frontend.from_pytorch(traced, [("x", (1, 6, 16))])


def test_missing_torch_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "torch", None)  # what Python does for a package that is not installed
    with pytest.raises(ModelImportError, match=r"pip install 'tunecli\[torch\]'"):
        relay.frontend.from_pytorch(object(), [("x", (1,))])
