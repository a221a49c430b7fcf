"""``relay.testing.bert``, ``gpt2`` and ``vit``: the built-in transformers behind TVM's
``relay.testing`` calling form, ``get_workload(...) -> (mod, params)`` with ``tvm.nd`` params."""

from __future__ import annotations

import pytest

from tunecli import relay
from tunecli.runtime import NDArray


@pytest.mark.parametrize(("name", "sizes", "data"), [
    ("bert", {"seq_len": 8, "hidden": 32, "heads": 4, "ff": 64, "vocab_size": 100}, ((2, 8), "int64")),
    ("gpt2", {"seq_len": 8, "hidden": 32, "heads": 4, "vocab_size": 100}, ((2, 8), "int64")),
    ("vit", {"image_size": 32, "hidden": 32, "heads": 4, "ff": 64, "num_classes": 10},
     ((2, 3, 32, 32), "float32")),
])
def test_transformer_workloads_are_relay_testing_networks(name: str, sizes: dict, data: tuple) -> None:
    mod, params = getattr(relay.testing, name).get_workload(batch_size=2, num_layers=1, **sizes)
    [first] = [p for p in mod["main"].params if p.name_hint == "data"]
    assert (tuple(first.checked_type.shape), str(first.checked_type.dtype)) == data
    assert params and all(isinstance(v, NDArray) for v in params.values())
