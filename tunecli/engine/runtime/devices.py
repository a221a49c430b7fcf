"""Which device runs what: one table of device kinds, looked up by name, DLPack type or target.

A new backend is one class in :data:`DEVICE_KINDS`; its ``names``, ``device_type`` and
``target_kinds`` say how users and targets reach it (``tunecli.device("llvm")`` and
``Target("llvm")`` both give the CPU).  Devices are made once per (kind, index) and shared.
"""

from __future__ import annotations

import functools

from tunecli.engine.target import Target, as_target
from tunecli.errors import ArgumentError

from .cpu import CPUDevice
from .cuda import CUDADevice
from .device import Device

#: Every device kind this runtime has.
DEVICE_KINDS: tuple[type[Device], ...] = (CPUDevice, CUDADevice)

_BY_TYPE = {kind.device_type: kind for kind in DEVICE_KINDS}
_BY_NAME = {name: kind for kind in DEVICE_KINDS for name in kind.names}
_BY_TARGET = {target_kind: kind for kind in DEVICE_KINDS for target_kind in kind.target_kinds}


@functools.cache
def _device(kind: type[Device], device_id: int) -> Device:
    return kind(device_id)


def _known_names() -> str:
    return ", ".join(repr(kind.names[0]) for kind in DEVICE_KINDS)


def device(dev_type: str | int | Target, dev_id: int = 0) -> Device:
    """A device by name, DLPack type or target, like TVM's ``tvm.device("llvm", 0)``.

    Parameters
    ----------
    dev_type : str, int or Target
        A device or target kind name (``"cpu"``, ``"llvm"``, or a full target string such as
        ``"llvm -mcpu=znver4"``), a :class:`~tunecli.engine.target.Target`, or a DLPack type.
    dev_id : int
        Device index.

    Returns
    -------
    Device

    Raises
    ------
    ArgumentError
        For a device this runtime does not have.
    """
    if isinstance(dev_id, bool) or not isinstance(dev_id, int) or dev_id < 0:
        raise ArgumentError(f"device: device_id must be a non-negative int, got {dev_id!r}")
    if isinstance(dev_type, int) and not isinstance(dev_type, bool):
        kind = _BY_TYPE.get(dev_type)
        if kind is None:
            raise ArgumentError(f"device: no device of DLPack type {dev_type} here "
                                f"(devices: {_known_names()})")
        return _device(kind, dev_id)
    if isinstance(dev_type, Target):
        return device_for_target(dev_type, dev_id)
    if not isinstance(dev_type, str) or not dev_type.split():
        raise ArgumentError(f"device: expected a device name such as 'cpu' or 'llvm', got {dev_type!r}")
    name = dev_type.split()[0]
    kind = _BY_NAME.get(name)
    if kind is None:
        raise ArgumentError(f"device: {name!r} is not available; this runtime has {_known_names()}")
    return _device(kind, dev_id)


def cpu(dev_id: int = 0) -> Device:
    """The host CPU (TVM's ``tvm.cpu``)."""
    return device(CPUDevice.device_type, dev_id)


def cuda(dev_id: int = 0) -> Device:
    """An NVIDIA GPU (TVM's ``tvm.cuda``); using it needs ``tunecli[cuda]``, a driver and the GPU."""
    return device(CUDADevice.device_type, dev_id)


def gpu(dev_id: int = 0) -> Device:
    """Old name of :func:`cuda` (TVM's ``tvm.gpu``)."""
    return cuda(dev_id)


def device_for_target(target: Target | str, dev_id: int = 0) -> Device:
    """The device that runs kernels compiled for ``target``.

    Raises
    ------
    ArgumentError
        When no device of this runtime runs the target's kind.
    """
    t = as_target(target)
    kind = _BY_TARGET.get(t.kind)
    if kind is None:
        raise ArgumentError(f"device: no device runs {t.kind!r} kernels here (devices: {_known_names()})")
    return _device(kind, dev_id)


def as_device(dev: Device | str | Target | None, where: str) -> Device:
    """``dev`` as a :class:`Device`: None is the CPU, names and targets are looked up.

    Raises
    ------
    ArgumentError
        Naming ``where`` for anything else.
    """
    if dev is None:
        return cpu(0)
    if isinstance(dev, Device):
        return dev
    if isinstance(dev, str | Target):
        return device(dev)
    raise ArgumentError(f"{where}: device must be a tunecli device (tunecli.cpu()), got {dev!r}")
