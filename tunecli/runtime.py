"""TVM's runtime face: devices (``tunecli.cpu()``, ``tunecli.device()``) and ``NDArray``.

tunecli kernels run on the host CPU, so the only device is the CPU (TVM's ``kDLCPU``).  An
:class:`NDArray` is a C-contiguous numpy array (a subclass of ``numpy.ndarray``) that also carries
its :class:`Device` and TVM's methods (``numpy()``, ``asnumpy()``, ``copyfrom()``, ``copyto()``), so
a compiled module accepts it wherever it accepts a numpy array and writes outputs into it in place.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tunecli.engine.target import Target
from tunecli.errors import ArgumentError

#: DLPack device type of the CPU (TVM's ``Device.kDLCPU``).
CPU_DEVICE_TYPE = 1

# TVM's names for device kinds that mean "the host CPU" (``tvm.device("llvm")`` is ``cpu(0)``).
_CPU_NAMES = frozenset({"cpu", "llvm", "c", "stackvm", "hybrid", "test", "composite"})


class Device:
    """A device on which arrays live and kernels run; tunecli only has the host CPU.

    Parameters
    ----------
    device_type : int
        DLPack device type; only ``1`` (CPU) exists.
    device_id : int
        Index of the device (any non-negative integer names the same host CPU, as in TVM).
    """

    kDLCPU = CPU_DEVICE_TYPE

    def __init__(self, device_type: int = CPU_DEVICE_TYPE, device_id: int = 0):
        if device_type != CPU_DEVICE_TYPE:
            raise ArgumentError(f"Device: only the CPU (device_type {CPU_DEVICE_TYPE}) is supported, "
                                f"got device_type {device_type}")
        if not isinstance(device_id, int) or isinstance(device_id, bool) or device_id < 0:
            raise ArgumentError(f"Device: device_id must be a non-negative int, got {device_id!r}")
        self.device_type = device_type
        self.device_id = device_id

    @property
    def exist(self) -> bool:
        """Whether the device exists (the host CPU always does)."""
        return True

    def sync(self) -> None:
        """Wait for work queued on the device (kernels run synchronously, so nothing to wait for)."""

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, Device) and other.device_type == self.device_type
                and other.device_id == self.device_id)

    def __hash__(self) -> int:
        return hash((self.device_type, self.device_id))

    def __repr__(self) -> str:
        return f"cpu({self.device_id})"


def cpu(dev_id: int = 0) -> Device:
    """The host CPU (TVM's ``tvm.cpu``)."""
    return Device(CPU_DEVICE_TYPE, dev_id)


def device(dev_type: str | int | Target, dev_id: int = 0) -> Device:
    """A device by name, like TVM's ``tvm.device("llvm", 0)`` or ``tvm.device("cpu")``.

    Parameters
    ----------
    dev_type : str, int or Target
        A device or target kind name (``"cpu"``, ``"llvm"``, ``"c"``, or a full target string
        such as ``"llvm -mcpu=znver4"``), a :class:`~tunecli.Target`, or the DLPack type ``1``.
    dev_id : int
        Device index.

    Returns
    -------
    Device

    Raises
    ------
    ArgumentError
        For a device other than the host CPU (``"cuda"``, ``"opencl"``, ...).
    """
    if isinstance(dev_type, int) and not isinstance(dev_type, bool):
        return Device(dev_type, dev_id)
    if isinstance(dev_type, Target):
        name = dev_type.kind
    elif isinstance(dev_type, str) and dev_type.split():
        name = dev_type.split()[0]
    else:
        raise ArgumentError(f"device: expected a device name such as 'cpu' or 'llvm', got {dev_type!r}")
    if name not in _CPU_NAMES:
        raise ArgumentError(f"device: {name!r} is not available; tunecli runs kernels on the host CPU "
                            f"only (use 'cpu' or 'llvm')")
    return Device(CPU_DEVICE_TYPE, dev_id)


def _as_device(dev: Device | str | None, where: str) -> Device:
    if dev is None:
        return cpu(0)
    if isinstance(dev, Device):
        return dev
    if isinstance(dev, str | Target):
        return device(dev)
    raise ArgumentError(f"{where}: device must be a tunecli Device (tunecli.cpu()), got {dev!r}")


class NDArray(np.ndarray):
    """A host array in TVM's style: a numpy array with ``device``, ``numpy()`` and ``copyfrom()``.

    Create one with :func:`array` or :func:`empty`; pass it to a compiled module like a numpy
    array.  ``numpy()`` returns a plain numpy copy, as TVM's does.
    """

    def __array_finalize__(self, obj: Any) -> None:
        self._device: Device | None = getattr(obj, "_device", None)

    @property
    def device(self) -> Device:  # type: ignore[override]
        """The device holding the array (replaces numpy's array-API ``device`` string)."""
        return self._device or cpu(0)

    def numpy(self) -> np.ndarray:
        """A plain numpy copy of the data."""
        return np.array(self, copy=True, subok=False)

    def asnumpy(self) -> np.ndarray:
        """Old name of :meth:`numpy`."""
        return self.numpy()

    def copyfrom(self, source: Any) -> NDArray:
        """Overwrite this array with ``source`` (same shape; converted to this dtype); returns self."""
        src = np.asarray(source)
        if src.shape != self.shape:
            raise ArgumentError(f"NDArray.copyfrom: source has shape {src.shape}, array has {self.shape}")
        np.copyto(self, src.astype(self.dtype, copy=False), casting="unsafe")
        return self

    def copyto(self, target: NDArray | Device) -> NDArray:
        """Copy into ``target`` (an NDArray of the same shape) or into a new array on a device."""
        if isinstance(target, NDArray):
            return target.copyfrom(self)
        return array(self.numpy(), _as_device(target, "NDArray.copyto"))

    def __repr__(self) -> str:
        return f"<tunecli.NDArray shape={self.shape}, {self.device!r}>\n{self.numpy()!r}"


def array(arr: Any, device: Device | str | None = None, mem_scope: str | None = None) -> NDArray:
    """Copy ``arr`` (a numpy array or anything ``numpy.asarray`` takes) into a new :class:`NDArray`.

    Parameters
    ----------
    arr : array_like
        The data; its dtype is kept (numpy's default dtype for Python lists).
    device : Device, optional
        Where the array lives (default and only choice: ``cpu(0)``).
    mem_scope : str, optional
        TVM's memory scope; only the default (``None`` or ``"global"``) exists on a CPU.
    """
    dev = _as_device(device, "nd.array")
    _check_scope(mem_scope, "nd.array")
    out = np.array(arr, copy=True, order="C").view(NDArray)
    out._device = dev
    return out


def empty(shape: Any, dtype: str = "float32", device: Device | str | None = None,
          mem_scope: str | None = None) -> NDArray:
    """A new :class:`NDArray` of ``shape`` and ``dtype`` (zero-filled, unlike TVM's uninitialised one)."""
    dev = _as_device(device, "nd.empty")
    _check_scope(mem_scope, "nd.empty")
    shape = (shape,) if isinstance(shape, int) else tuple(int(s) for s in shape)
    out = np.zeros(shape, dtype=np.dtype(dtype)).view(NDArray)
    out._device = dev
    return out


def _check_scope(mem_scope: str | None, where: str) -> None:
    if mem_scope not in (None, "global"):
        raise ArgumentError(f"{where}: memory scope {mem_scope!r} does not exist on the CPU; use None")


__all__ = ["CPU_DEVICE_TYPE", "Device", "NDArray", "array", "cpu", "device", "empty"]
