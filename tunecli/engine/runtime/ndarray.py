"""TVM's ``NDArray``: arrays on a device, made with :func:`array` and :func:`empty`.

On the CPU an :class:`NDArray` is a C-contiguous numpy array (a subclass of ``numpy.ndarray``)
that also carries its device and TVM's methods (``numpy()``, ``asnumpy()``, ``copyfrom()``,
``copyto()``), so a compiled module accepts it wherever it accepts a numpy array and writes
outputs into it in place.  A device whose memory is not host memory returns its own array type
from ``copy_in``/``empty`` with the same methods.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import ArrayLike

from tunecli.errors import ArgumentError

from .device import Device, DeviceArray
from .devices import as_device, cpu


class NDArray(np.ndarray):
    """A host array in TVM's style: a numpy array with ``device``, ``numpy()`` and ``copyfrom()``.

    Create one with :func:`array` or :func:`empty`; pass it to a compiled module like a numpy
    array.  ``numpy()`` returns a plain numpy copy, as TVM's does.
    """

    def __array_finalize__(self, obj: object) -> None:
        self._device: Device | None = getattr(obj, "_device", None)

    @property
    def device(self) -> Device:  # type: ignore[override]
        """The device holding the array (replaces numpy's array-API ``device`` string)."""
        return self._device or cpu(0)

    @property
    def ctx(self) -> Device:
        """Old name of :attr:`device` (TVM's ``NDArray.ctx``)."""
        return self.device

    def numpy(self) -> np.ndarray:
        """A plain numpy copy of the data."""
        return np.array(self, copy=True, subok=False)

    def asnumpy(self) -> np.ndarray:
        """Old name of :meth:`numpy`."""
        return self.numpy()

    def copyfrom(self, source: ArrayLike) -> NDArray:
        """Overwrite this array with ``source`` (same shape; converted to this dtype); returns self."""
        src = np.asarray(source)
        if src.shape != self.shape:
            raise ArgumentError(f"NDArray.copyfrom: source has shape {src.shape}, array has {self.shape}")
        np.copyto(self, src.astype(self.dtype, copy=False), casting="unsafe")
        return self

    def copyto(self, target: NDArray | Device) -> DeviceArray:
        """Copy into ``target`` (an NDArray of the same shape) or into a new array on a device."""
        if isinstance(target, NDArray):
            return target.copyfrom(self)
        return array(self.numpy(), as_device(target, "NDArray.copyto"))

    def __repr__(self) -> str:
        return f"<tunecli.NDArray shape={self.shape}, {self.device!r}>\n{self.numpy()!r}"


def array(arr: ArrayLike, device: Device | str | None = None, mem_scope: str | None = None, *,
          ctx: Device | str | None = None) -> DeviceArray:
    """Copy ``arr`` (a numpy array or anything ``numpy.asarray`` takes) into a new array on ``device``.

    Parameters
    ----------
    arr : array_like
        The data; its dtype is kept (numpy's default dtype for Python lists).
    device : Device, optional
        Where the array lives (default ``cpu(0)``).
    mem_scope : str, optional
        TVM's memory scope; only the default (``None`` or ``"global"``) exists.
    ctx : Device, optional
        Older name of ``device`` (TVM's ``nd.array(x, ctx=tvm.gpu(0))``).

    Returns
    -------
    NDArray
        On the CPU; a device with its own memory returns its own array type.
    """
    dev = as_device(_device_or_ctx(device, ctx, "nd.array"), "nd.array")
    _check_scope(mem_scope, "nd.array")
    return _on_device(dev.copy_in(np.asarray(arr)), dev)


def empty(shape: int | Sequence[int], dtype: str = "float32", device: Device | str | None = None,
          mem_scope: str | None = None, *, ctx: Device | str | None = None) -> DeviceArray:
    """A new array of ``shape`` and ``dtype`` on ``device`` (zero-filled, unlike TVM's uninitialised
    one); ``ctx`` is the older name of ``device``."""
    dev = as_device(_device_or_ctx(device, ctx, "nd.empty"), "nd.empty")
    _check_scope(mem_scope, "nd.empty")
    shape = (shape,) if isinstance(shape, int) else tuple(int(s) for s in shape)
    return _on_device(dev.empty(shape, str(np.dtype(dtype))), dev)


def _on_device(data: DeviceArray, dev: Device) -> DeviceArray:
    """Give a host-memory array its NDArray face; other devices' arrays are already theirs."""
    if not isinstance(data, np.ndarray):
        return data
    out = data.view(NDArray)
    out._device = dev
    return out


def _device_or_ctx(device: Device | str | None, ctx: Device | str | None, where: str) -> Device | str | None:
    """The device given as ``device`` or by its older name ``ctx`` (not both)."""
    if device is not None and ctx is not None:
        raise ArgumentError(f"{where}: give the device once, as device= (ctx= is its older name)")
    return ctx if device is None else device


def _check_scope(mem_scope: str | None, where: str) -> None:
    if mem_scope not in (None, "global"):
        raise ArgumentError(f"{where}: memory scope {mem_scope!r} does not exist; use None")
