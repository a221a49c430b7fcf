"""The device interface: what a runtime backend (the CPU; later a GPU) does for tunecli.

A :class:`Device` is also the handle a user holds (TVM's ``tvm.cpu(0)``: a DLPack device type
and an index), so ``nd.array(x, device=dev)``, ``dev.sync()`` and ``Module.time_evaluator(name,
dev)`` work on it directly.  A backend implements memory (``empty``, ``copy_in``, ``copy_out``),
kernels (``load`` a :class:`~tunecli.engine.codegen.CompiledKernel`, ``launch`` it on arrays of
the device, ``sync``) and timing with the device's own clock (``time``).  Which backend runs a
target is decided by the table in :mod:`tunecli.engine.runtime.devices`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from typing import ClassVar, Protocol

import numpy as np

from tunecli.engine.codegen import ArgSpec, CompiledKernel
from tunecli.errors import ArgumentError


class DeviceArray(Protocol):
    """An array in a device's memory: a numpy array on the host, a ``CUDAArray`` on a GPU."""

    shape: tuple[int, ...]
    dtype: np.dtype
    nbytes: int


class LoadedKernel(Protocol):
    """A kernel loaded on a device: what :meth:`Device.load` returns and :meth:`Device.launch` runs."""

    entry_name: str
    arg_specs: tuple[ArgSpec, ...]


class Device(ABC):
    """One device of a kind (the subclass) and its index.

    Parameters
    ----------
    device_id : int
        Index of the device among those of its kind.
    """

    kDLCPU = 1  #: DLPack type of the host CPU (TVM's constant)
    kDLCUDA = 2  #: DLPack type of an NVIDIA GPU (TVM's constant)

    #: DLPack device type (TVM's ``Device.device_type``).
    device_type: ClassVar[int]
    #: Names ``tunecli.device(name)`` accepts for this kind; the first is used in ``repr``.
    names: ClassVar[tuple[str, ...]]
    #: Target kinds whose kernels run on this kind of device.
    target_kinds: ClassVar[tuple[str, ...]]
    #: How messages name the kind ("the CPU").
    label: ClassVar[str]

    def __init__(self, device_id: int = 0) -> None:
        if not isinstance(device_id, int) or isinstance(device_id, bool) or device_id < 0:
            raise ArgumentError(f"{self.names[0]}: device_id must be a non-negative int, got {device_id!r}")
        self.device_id = device_id

    @property
    def exist(self) -> bool:
        """Whether the device is present on this machine."""
        return True

    # TVM's attributes of GPUs: None where the kind has none (the CPU), as in TVM
    @property
    def device_name(self) -> str | None:
        """The device's name (GPUs)."""
        return None

    @property
    def compute_version(self) -> str | None:
        """The compute capability (GPUs)."""
        return None

    @property
    def max_threads_per_block(self) -> int | None:
        """Most threads in a block (GPUs)."""
        return None

    @property
    def warp_size(self) -> int | None:
        """Threads in a warp (GPUs)."""
        return None

    @property
    def max_shared_memory_per_block(self) -> int | None:
        """Bytes of shared memory a block may use (GPUs)."""
        return None

    @property
    def multi_processor_count(self) -> int | None:
        """Multiprocessors (GPUs)."""
        return None

    @property
    def max_clock_rate(self) -> int | None:
        """Peak clock in kHz (GPUs)."""
        return None

    @property
    def max_thread_dimensions(self) -> tuple[int, int, int] | None:
        """Most threads of a block along x, y and z (GPUs)."""
        return None

    # memory ------------------------------------------------------------------------------------
    @abstractmethod
    def empty(self, shape: Sequence[int], dtype: str, guarded: bool = False) -> DeviceArray:
        """A new zero-filled array of ``shape`` and ``dtype`` in the device's memory.

        ``guarded`` asks for an array whose overrun faults at once (where the device can).
        """

    @abstractmethod
    def copy_in(self, host: np.ndarray, guarded: bool = False) -> DeviceArray:
        """A new device array holding a copy of ``host`` (see :meth:`empty` for ``guarded``)."""

    @abstractmethod
    def copy_out(self, array: DeviceArray) -> np.ndarray:
        """A new host (numpy) array holding a copy of the device array ``array``."""

    # kernels -----------------------------------------------------------------------------------
    @abstractmethod
    def load(self, kernel: CompiledKernel) -> LoadedKernel:
        """Load ``kernel`` so it can be launched here; the result is passed to :meth:`launch`."""

    @abstractmethod
    def launch(self, loaded: LoadedKernel, arrays: Sequence[DeviceArray]) -> None:
        """Run a loaded kernel once on ``arrays`` (checked against its argument specs)."""

    @abstractmethod
    def sync(self) -> None:
        """Wait until all work queued on the device has finished."""

    @abstractmethod
    def time(self, loaded: LoadedKernel, arrays: Sequence[DeviceArray], number: int = 10, repeat: int = 1,
             min_repeat_ms: float = 0.0, warmup_ms: float = 0.0,
             before_repeat: Callable[[], None] | None = None, warmup: int = 1) -> list[float]:
        """Seconds per launch of ``loaded`` on ``arrays``, one per repeat, on the device's clock.

        TVM's ``time_evaluator`` semantics (see :func:`tunecli.engine.runtime.timer.time_calls`):
        ``warmup`` untimed launches (then more until ``warmup_ms`` have passed), ``repeat`` rounds of
        ``number`` launches, ``number`` growing until a round lasts ``min_repeat_ms``;
        ``before_repeat`` runs, untimed, before each round.
        """

    # identity ----------------------------------------------------------------------------------
    def __eq__(self, other: object) -> bool:
        return (isinstance(other, Device) and other.device_type == self.device_type
                and other.device_id == self.device_id)

    def __hash__(self) -> int:
        return hash((self.device_type, self.device_id))

    def __repr__(self) -> str:
        return f"{self.names[0]}({self.device_id})"
