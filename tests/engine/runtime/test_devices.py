"""The device table: devices by name, DLPack type and target; NDArrays on a device."""

from __future__ import annotations

import numpy as np
import pytest

from tunecli.engine.runtime import CPUDevice, NDArray, array, as_device, cpu, device, device_for_target, empty
from tunecli.engine.runtime.devices import DEVICE_KINDS
from tunecli.engine.target import Target
from tunecli.errors import ArgumentError


def test_every_kind_is_reachable_by_its_names_type_and_targets():
    for kind in DEVICE_KINDS:
        for name in kind.names:
            assert type(device(name, 2)) is kind and device(name, 2).device_id == 2
        assert type(device(kind.device_type)) is kind
        for target_kind in kind.target_kinds:
            assert type(device_for_target(target_kind)) is kind


def test_llvm_targets_run_on_the_cpu_and_devices_are_shared():
    assert device_for_target(Target("llvm -mcpu=generic")) is cpu(0) is device("llvm") is device(1)
    assert device_for_target("llvm -mtriple=aarch64-linux-gnu") == CPUDevice(0)  # its load refuses to run it
    assert as_device(None, "here") is cpu(0) and as_device("cpu", "here") is cpu(0)


@pytest.mark.parametrize("bad,match", [
    ("opencl", "'opencl' is not available"), (4, "DLPack type 4"), ("", "expected a device name"),
    (Target("opencl"), "no device runs 'opencl' kernels"),
])
def test_unknown_devices_are_argument_errors(bad, match):
    with pytest.raises(ArgumentError, match=match):
        device(bad)


def test_as_device_names_the_caller():
    with pytest.raises(ArgumentError, match="^nd.array: device must be"):
        as_device(3.5, "nd.array")  # type: ignore[arg-type]


def test_arrays_on_the_cpu_are_ndarrays():
    a = array([[1, 2], [3, 4]], device=cpu(1))
    assert isinstance(a, NDArray) and a.device == cpu(1) and np.array_equal(a.numpy(), [[1, 2], [3, 4]])
    e = empty((2, 2), "float64", "llvm")
    assert isinstance(e, NDArray) and e.device is cpu(0) and e.dtype == np.float64 and not e.any()
