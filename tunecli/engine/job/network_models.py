"""The built-in networks a model job may name (``model: resnet-18``): one registry that the job
schema, its error messages, the docs and the tests read.

Each entry builds the network of ``relay.testing`` with random weights for a batch size, image
shape and dtype.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tunecli.engine.graph.models import mobilenet, mobilenet_v2, resnet, squeezenet, vgg

#: ``(batch_size, image_shape, dtype) -> (mod, params)``
Loader = Callable[[int, tuple[int, ...], str], tuple[Any, dict[str, Any]]]


@dataclass(frozen=True)
class BuiltinModel:
    """A built-in network.

    Attributes
    ----------
    name : str
        Its name in a job (``resnet-18``).
    load : Loader
    image_shape : tuple of int
        The default ``(C, H, W)``.
    input_name : str
        The name of its data input.
    """

    name: str
    load: Loader
    image_shape: tuple[int, ...] = (3, 224, 224)
    input_name: str = "data"


def _resnet(layers: int) -> Loader:
    return lambda batch, image, dtype: resnet.get_workload(batch_size=batch, num_layers=layers,
                                                           image_shape=image, dtype=dtype)


def _vgg(layers: int) -> Loader:
    return lambda batch, image, dtype: vgg.get_workload(batch, image_shape=image, dtype=dtype,
                                                        num_layers=layers)


def _squeezenet(version: str) -> Loader:
    return lambda batch, image, dtype: squeezenet.get_workload(batch_size=batch, version=version,
                                                               image_shape=image, dtype=dtype)


_ENTRIES = [
    *(BuiltinModel(f"resnet-{n}", _resnet(n)) for n in (18, 34, 50, 101, 152)),
    BuiltinModel("mobilenet", lambda batch, image, dtype: mobilenet.get_workload(
        batch_size=batch, image_shape=image, dtype=dtype)),
    BuiltinModel("mobilenet_v2", lambda batch, image, dtype: mobilenet_v2.get_workload(
        batch_size=batch, image_shape=image, dtype=dtype)),
    *(BuiltinModel(f"vgg-{n}", _vgg(n)) for n in (11, 13, 16, 19)),
    BuiltinModel("squeezenet1.0", _squeezenet("1.0")),
    BuiltinModel("squeezenet1.1", _squeezenet("1.1")),
]

#: Name -> built-in network.
MODELS: dict[str, BuiltinModel] = {m.name: m for m in _ENTRIES}
