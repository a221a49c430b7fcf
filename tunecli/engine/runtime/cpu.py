"""The host CPU as a :class:`~tunecli.engine.runtime.device.Device`.

Arrays are numpy arrays in this process's memory.  A kernel's object is linked into a
process-wide LLJIT (with libm and libc resolved from the process) and called through
ctypes with one data pointer per argument; before each launch the thread count of its
``parallel`` loops (:mod:`tunecli.engine.runtime.threads`) is written into the kernel's
``<entry>__num_threads`` global (its ``<entry>__parallel_for`` points at the thread pool,
:mod:`tunecli.engine.runtime.thread_pool`).  A *guarded* array ends just before a ``PROT_NONE`` page, so a
kernel that writes past its end faults at once (a measurement worker reports that as a runtime
error) instead of corrupting memory silently.  Timing uses ``time.perf_counter``.
"""

from __future__ import annotations

import ctypes
import functools
import itertools
import math
import mmap
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import llvmlite.binding as llvm
import numpy as np

from tunecli.engine.codegen import ArgSpec, CompiledKernel
from tunecli.engine.codegen.compile import LOCK
from tunecli.engine.codegen.parallel import num_threads_symbol, parallel_for_symbol
from tunecli.engine.target import Target, host_arch
from tunecli.errors import ArgumentError, CodegenError, TargetError

from .device import Device
from .heap import keep_scratch_memory
from .threads import bind_thread_pool, get_num_threads
from .timer import time_calls

#: Alignment of every guarded array's start, in bytes (TVM's ``kAllocAlignment``).
ALIGNMENT = 64

_PROT_NONE = 0
_libc = ctypes.CDLL(None, use_errno=True)
_libc.mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
_jit_state: dict[str, llvm.LLJIT] = {}
_library_ids = itertools.count()
_ELF_MACHINES = {3: "x86", 40: "ARM", 62: "x86_64", 183: "AArch64", 243: "RISC-V"}
_HOST_ELF_MACHINE = {"x86_64": 62, "aarch64": 183, "arm": 40, "armv7l": 40, "riscv64": 243}
#: Hosts whose JIT links with JITLink instead of RuntimeDyld: on AArch64, RuntimeDyld places an
#: object's sections independently and aborts the process when a 32-bit PC-relative relocation
#: (``.eh_frame`` → ``.text``, GOT pages) spans more than 2 GiB, which depends on where mmap put them.
_JITLINK_ARCHES = ("aarch64",)


@dataclass
class CPUKernel:
    """A kernel linked into this process: its ctypes function and its thread-count global."""

    entry_name: str
    arg_specs: tuple[ArgSpec, ...]
    func: Callable[..., None]
    threads: ctypes.c_int32 | None
    #: the JIT's resource tracker, or the shared library the kernel came from: the code stays loaded
    #: while it lives
    library: llvm.ResourceTracker | ctypes.CDLL

    def prepare(self) -> Callable[..., None]:
        """The function, with the thread count of its parallel loops set to the current one."""
        if self.threads is not None:
            self.threads.value = get_num_threads()
        return self.func


class CPUDevice(Device):
    """The host CPU (TVM's ``kDLCPU``); every ``device_id`` names the same processor, as in TVM."""

    device_type = 1
    names = ("cpu", "llvm", "c", "stackvm", "hybrid", "test", "composite")
    target_kinds = ("llvm", "c")
    label = "the CPU"

    def empty(self, shape: Sequence[int], dtype: str, guarded: bool = False) -> np.ndarray:
        """A zero-filled numpy array; ``guarded``: it ends just before an inaccessible page."""
        shape = tuple(int(s) for s in shape)
        return guarded_empty(shape, dtype) if guarded else np.zeros(shape, dtype=np.dtype(dtype))

    def copy_in(self, host: np.ndarray, guarded: bool = False) -> np.ndarray:
        """A C-contiguous copy of ``host`` (placed before a guard page when ``guarded``)."""
        host = np.asarray(host)
        out = self.empty(host.shape, str(host.dtype), guarded)
        out[...] = host
        return out

    def copy_out(self, array: np.ndarray) -> np.ndarray:
        """A plain numpy copy of ``array``."""
        return np.array(array, copy=True, subok=False)

    def load(self, kernel: CompiledKernel) -> CPUKernel:
        """Link ``kernel``'s object into this process's JIT.

        Raises
        ------
        TargetError
            When the object was built for another processor.
        CodegenError
            When the object cannot be linked or lacks the entry symbol.
        """
        with LOCK:
            return _link(kernel)

    def launch(self, loaded: CPUKernel, arrays: Sequence[np.ndarray]) -> None:
        """Call the kernel on numpy arrays (outputs are written in place)."""
        pointers = data_pointers(loaded, arrays)
        loaded.prepare()(*pointers)

    def sync(self) -> None:
        """Nothing to wait for: kernels run synchronously on the calling thread."""

    def time(self, loaded: CPUKernel, arrays: Sequence[np.ndarray], number: int = 10, repeat: int = 1,
             min_repeat_ms: float = 0.0, warmup_ms: float = 0.0,
             before_repeat: Callable[[], None] | None = None, warmup: int = 1) -> list[float]:
        """Seconds per call, one per repeat (see :meth:`Device.time`); ``warmup`` untimed calls first."""
        pointers = data_pointers(loaded, arrays)
        return time_calls(loaded.prepare(), pointers, number, repeat, min_repeat_ms, warmup=warmup,
                          before_repeat=before_repeat, warmup_ms=warmup_ms)


def _jit() -> llvm.LLJIT:
    """This process's LLJIT (created on first use)."""
    if "jit" not in _jit_state:
        llvm.initialize_native_target()
        llvm.initialize_native_asmprinter()
        host = Target("llvm")
        tm = llvm.Target.from_triple(host.llvm_triple).create_target_machine(
            cpu=host.llvm_cpu, features=host.llvm_features, opt=3, reloc="pic")
        _jit_state["jit"] = llvm.create_lljit_compiler(tm, use_jit_link=host_arch() in _JITLINK_ARCHES)
    return _jit_state["jit"]


def _link(kernel: CompiledKernel) -> CPUKernel:
    entry = kernel.entry_name
    if not kernel.target.is_host:
        raise TargetError(f"module {entry!r} was compiled for {str(kernel.target)!r} "
                          f"({kernel.target.llvm_triple}) and cannot run on this machine")
    _check_object_machine(kernel.obj, entry)
    jit = _jit()
    keep_scratch_memory()  # the kernel's heap scratch buffers are reused from call to call
    threads_name, pool_name = num_threads_symbol(entry), parallel_for_symbol(entry)
    has_threads, has_pool = threads_name.encode() in kernel.obj, pool_name.encode() in kernel.obj
    builder = llvm.JITLibraryBuilder().add_object_img(kernel.obj).add_current_process()
    builder.export_symbol(entry)
    for name in (threads_name,) * has_threads + (pool_name,) * has_pool:
        builder.export_symbol(name)
    try:
        library = builder.link(jit, f"tunecli_kernel{next(_library_ids)}")
    except RuntimeError as err:
        raise CodegenError(f"module {entry!r}: the object could not be linked: {err}") from None
    address = library[entry]
    if not address:
        raise CodegenError(f"module: symbol {entry!r} is not defined in the object")
    threads = ctypes.c_int32.from_address(library[threads_name]) if has_threads and library[threads_name] \
        else None
    if has_pool and library[pool_name]:
        bind_thread_pool(library[pool_name])  # parallel loops run on the thread pool
    func = ctypes.CFUNCTYPE(None, *([ctypes.c_void_p] * len(kernel.arg_specs)))(address)
    return CPUKernel(entry, tuple(kernel.arg_specs), func, threads, library)


def data_pointers(loaded: CPUKernel, arrays: Sequence[np.ndarray]) -> list[int]:
    """Check ``arrays`` against the kernel's argument specs and return their data addresses.

    Raises
    ------
    ArgumentError
        For a wrong count, dtype, shape or layout, a read-only output, or arrays sharing memory.
    """
    entry, specs = loaded.entry_name, loaded.arg_specs
    if len(arrays) != len(specs):
        raise ArgumentError(f"{entry} takes {len(specs)} arrays ({', '.join(a.name for a in specs)}), "
                            f"got {len(arrays)}")
    out, spans = [], []
    for k, (arr, spec) in enumerate(zip(arrays, specs, strict=True)):
        if not isinstance(arr, np.ndarray):
            raise ArgumentError(f"{_argument(entry, k, spec)} must be a numpy array, "
                                f"got {type(arr).__name__}")
        flags = arr.flags
        if (arr.dtype != _dtype(spec.dtype) or arr.shape != tuple(spec.shape) or not flags.c_contiguous
                or (spec.is_output and not flags.writeable)):
            _refuse(_argument(entry, k, spec), arr, spec)
        nbytes = arr.nbytes
        address = _address(arr, writable=flags.writeable, nbytes=nbytes)
        out.append(address)
        if nbytes:
            spans.append((address, address + nbytes, k))
    _check_disjoint(entry, spans, specs)
    return out


def _address(arr: np.ndarray, writable: bool, nbytes: int) -> int:
    """The data address of a C-contiguous array, read once per call: through a ctypes view of a
    writable, non-empty one (about a third of the cost of ``arr.ctypes.data``, which builds two
    ctypes objects per read), else ``arr.ctypes.data``."""
    if writable and nbytes:
        return ctypes.addressof(ctypes.c_char.from_buffer(arr))
    return arr.ctypes.data


@functools.cache
def _dtype(name: str) -> np.dtype:
    return np.dtype(name)


def _argument(entry: str, k: int, spec: ArgSpec) -> str:
    return f"{entry}: argument {k} ({spec.name!r})"


def _refuse(where: str, arr: np.ndarray, spec: ArgSpec) -> None:
    """The ArgumentError of the first check ``arr`` fails against ``spec``."""
    if arr.dtype != np.dtype(spec.dtype):
        raise ArgumentError(f"{where} must have dtype {spec.dtype}, got {arr.dtype}")
    if tuple(arr.shape) != tuple(spec.shape):
        raise ArgumentError(f"{where} must have shape {tuple(spec.shape)}, got {tuple(arr.shape)}")
    if not arr.flags.c_contiguous:
        raise ArgumentError(f"{where} must be C-contiguous (use np.ascontiguousarray)")
    raise ArgumentError(f"{where} is an output and must be a writable array")


def _check_disjoint(entry: str, spans: list[tuple[int, int, int]], specs: Sequence[ArgSpec]) -> None:
    """Arguments are ``noalias`` in the kernel: reject arrays whose memory overlaps (``spans``:
    ``(start, end, argument index)`` of each non-empty array)."""
    spans.sort()
    for (_, end, k), (start, _, j) in zip(spans, spans[1:], strict=False):
        if start < end:
            first, second = sorted((k, j))
            raise ArgumentError(f"{entry}: arguments {first} ({specs[first].name!r}) and {second} "
                                f"({specs[second].name!r}) share memory; pass separate arrays")


def _check_object_machine(obj: bytes, entry_name: str) -> None:
    """Refuse an ELF object built for another processor: LLVM's JIT would crash on it."""
    if obj[:4] != b"\x7fELF" or len(obj) < 20:
        return
    machine = int.from_bytes(obj[18:20], "little" if obj[5] == 1 else "big")
    host = _HOST_ELF_MACHINE.get(host_arch())
    if host is not None and machine != host:
        built_for = _ELF_MACHINES.get(machine, machine)
        raise TargetError(f"module {entry_name!r}: the object file is for {built_for}, "
                          f"but this machine is {host_arch()}; build it for this machine's target")


def guarded_empty(shape: Sequence[int], dtype: str) -> np.ndarray:
    """Return a zero-filled array that ends just before a ``PROT_NONE`` page.

    Parameters
    ----------
    shape : sequence of int
    dtype : str

    Returns
    -------
    numpy.ndarray
        Writable, C-contiguous, 64-byte aligned; it keeps its mapping alive.  An overrun of
        an array whose size is a multiple of 64 bytes faults at the first byte past its end.
    """
    dt = np.dtype(dtype)
    count = math.prod(shape)
    nbytes = count * dt.itemsize
    page = mmap.PAGESIZE
    data_pages = max(1, -(-nbytes // page))
    region = mmap.mmap(-1, (data_pages + 1) * page)
    anchor = ctypes.c_char.from_buffer(region)
    base = ctypes.addressof(anchor)
    del anchor  # release the buffer export; the address stays valid while ``region`` lives
    if _libc.mprotect(base + data_pages * page, page, _PROT_NONE) != 0:
        raise OSError(ctypes.get_errno(), "mprotect of the guard page failed")
    offset = data_pages * page - nbytes
    offset -= offset % ALIGNMENT
    return np.frombuffer(region, dtype=dt, count=count, offset=offset).reshape(tuple(shape))
