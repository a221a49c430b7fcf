"""A workload's arguments in log form and back: tensors as ("TENSOR", shape, dtype)."""

from __future__ import annotations

import pytest

from tunecli.engine import te
from tunecli.engine.task.workload_args import as_placeholder, deserialize_args, is_tensor_arg, serialize_args
from tunecli.errors import InstantiationError


def test_a_tensor_in_log_form_is_a_three_item_tuple_or_list_tagged_tensor() -> None:
    assert is_tensor_arg(("TENSOR", (1, 3), "float32"))
    assert is_tensor_arg(["TENSOR", [1, 3], "int8"])  # as read back from JSON
    assert not is_tensor_arg(("TENSOR", (1, 3)))
    assert not is_tensor_arg((1, 3, "float32"))
    assert not is_tensor_arg("TENSOR")


def test_as_placeholder_names_the_tensor_and_keeps_a_tensor_as_it_is() -> None:
    t = as_placeholder(["TENSOR", [2, 4], "int8"], "data")
    assert (tuple(t.shape), t.dtype, t.op.name) == ((2, 4), "int8", "data")
    assert as_placeholder(t, "other") is t
    with pytest.raises(InstantiationError, match=r'kernel: a tensor or \("TENSOR", shape, dtype\) expected, '
                                                 r'got 3'):
        as_placeholder(3, "kernel")


def test_deserialize_args_turns_only_tensors_into_placeholders() -> None:
    a = te.placeholder((4, 5), dtype="float32", name="a")
    back = deserialize_args(list(serialize_args([a, (1, 1), "NCHW", None])))
    assert isinstance(back[0], te.Tensor) and tuple(back[0].shape) == (4, 5)
    assert back[1:] == [(1, 1), "NCHW", None]
