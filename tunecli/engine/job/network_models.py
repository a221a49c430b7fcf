"""The built-in networks a model job may name (``model: resnet-18``, ``model: bert-base``): one
registry that the job schema, its error messages, the docs and the tests read.

Each entry builds the network of ``relay.testing`` with random weights for a batch size, the shape
of one sample of its data input and a dtype: an image ``(C, H, W)`` for the vision models, a
sequence length ``(seq_len,)`` of token ids for the text models (BERT, GPT-2).  The transformers
also take sizes (``layers``, ``hidden``, ``heads``) that make a reduced model of the same form.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from tunecli.engine.graph.ir_module import IRModule
from tunecli.engine.graph.models import (
    bert,
    efficientnet,
    gpt2,
    mobilenet,
    mobilenet_v2,
    resnet,
    squeezenet,
    vgg,
    vit,
)
from tunecli.engine.runtime.ndarray import NDArray
from tunecli.errors import GraphError

#: A network and its weights: ``(mod, params)``.
Workload = tuple[IRModule, dict[str, NDArray]]
#: ``(batch_size, sample_shape, dtype, **sizes) -> (mod, params)``; ``sample_shape`` is ``(C, H, W)``
#: or ``(seq_len,)``, ``sizes`` the model's :attr:`BuiltinModel.sizes` given by the job.
Loader = Callable[..., Workload]

#: The sizes a transformer takes (``layers: 2``); the feed-forward width follows as ``4 * hidden``.
TRANSFORMER_SIZES = ("layers", "hidden", "heads")


@dataclass(frozen=True)
class BuiltinModel:
    """A built-in network.

    Attributes
    ----------
    name : str
        Its name in a job (``resnet-18``).
    load : Loader
    image_shape : tuple of int or None
        The default ``(C, H, W)`` of a vision model; None for a text model.
    seq_len : int or None
        The default sequence length of a text model (its input: token ids ``(batch, seq_len)``).
    max_seq_len : int or None
        The longest sequence the model's position table holds.
    input_name : str
        The name of its data input.
    sizes : tuple of str
        The size options it takes besides its input's shape (``layers``, ``hidden``, ``heads``).
    """

    name: str
    load: Loader
    image_shape: tuple[int, ...] | None = (3, 224, 224)
    seq_len: int | None = None
    max_seq_len: int | None = None
    input_name: str = "data"
    sizes: tuple[str, ...] = ()

    @property
    def is_text(self) -> bool:
        """Whether its input is token ids of a sequence length (not an image)."""
        return self.seq_len is not None

    @property
    def sample_shape(self) -> tuple[int, ...]:
        """The default shape of one sample of its input: ``(C, H, W)`` or ``(seq_len,)``."""
        return (self.seq_len,) if self.seq_len is not None else tuple(self.image_shape or ())


def _resnet(layers: int) -> Loader:
    return lambda batch, image, dtype: resnet.get_workload(batch_size=batch, num_layers=layers,
                                                           image_shape=image, dtype=dtype)


def _vgg(layers: int) -> Loader:
    return lambda batch, image, dtype: vgg.get_workload(batch, image_shape=image, dtype=dtype,
                                                        num_layers=layers)


def _squeezenet(version: str) -> Loader:
    return lambda batch, image, dtype: squeezenet.get_workload(batch_size=batch, version=version,
                                                               image_shape=image, dtype=dtype)


def _transformer_sizes(sizes: dict[str, int], ff: bool = True) -> dict[str, int]:
    """A job's ``layers``/``hidden``/``heads`` as ``get_workload`` keywords (``ff``: 4 * hidden)."""
    out = {"num_layers": sizes["layers"]} if "layers" in sizes else {}
    out.update({key: sizes[key] for key in ("hidden", "heads") if key in sizes})
    if ff and "hidden" in sizes:
        out["ff"] = 4 * sizes["hidden"]
    return out


def _bert(batch: int, shape: tuple[int, ...], dtype: str, **sizes: int) -> Workload:
    return bert.get_workload(batch_size=batch, seq_len=shape[0], dtype=dtype, **_transformer_sizes(sizes))


def _gpt2(batch: int, shape: tuple[int, ...], dtype: str, **sizes: int) -> Workload:
    return gpt2.get_workload(batch_size=batch, seq_len=shape[0], dtype=dtype,
                             **_transformer_sizes(sizes, ff=False))


def _vit(batch: int, image: tuple[int, ...], dtype: str, **sizes: int) -> Workload:
    channels, height, width = image
    if channels != 3 or height != width or height % 16:
        raise GraphError(f"vit-b16 takes square RGB images [3, N, N] (N a multiple of 16), got "
                         f"{list(image)}")
    return vit.get_workload(batch_size=batch, image_size=height, dtype=dtype, **_transformer_sizes(sizes))


_ENTRIES = [
    *(BuiltinModel(f"resnet-{n}", _resnet(n)) for n in (18, 34, 50, 101, 152)),
    BuiltinModel("mobilenet", lambda batch, image, dtype: mobilenet.get_workload(
        batch_size=batch, image_shape=image, dtype=dtype)),
    BuiltinModel("mobilenet_v2", lambda batch, image, dtype: mobilenet_v2.get_workload(
        batch_size=batch, image_shape=image, dtype=dtype)),
    BuiltinModel("efficientnet-b0", lambda batch, image, dtype: efficientnet.get_workload(
        batch_size=batch, image_shape=image, dtype=dtype)),
    *(BuiltinModel(f"vgg-{n}", _vgg(n)) for n in (11, 13, 16, 19)),
    BuiltinModel("squeezenet1.0", _squeezenet("1.0")),
    BuiltinModel("squeezenet1.1", _squeezenet("1.1")),
    BuiltinModel("bert-base", _bert, image_shape=None, seq_len=128, max_seq_len=512, sizes=TRANSFORMER_SIZES),
    BuiltinModel("gpt2", _gpt2, image_shape=None, seq_len=128, max_seq_len=1024, sizes=TRANSFORMER_SIZES),
    BuiltinModel("vit-b16", _vit, sizes=TRANSFORMER_SIZES),
]

#: Name -> built-in network.
MODELS: dict[str, BuiltinModel] = {m.name: m for m in _ENTRIES}
