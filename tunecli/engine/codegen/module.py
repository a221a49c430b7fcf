"""Compiled kernels: :class:`Module` (call, object, source, timing) and :func:`load_module`.

A module is a relocatable object file plus what is needed to call it: the entry symbol and
one :class:`ArgSpec` per pointer argument.  On the host the object is linked into a
process-wide LLJIT (with libgomp, libm and libc resolved from the process) the first time the
module is called; the same path loads an object produced by another process.
"""

from __future__ import annotations

import ctypes
import itertools
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import llvmlite.binding as llvm
import numpy as np

from tunecli.engine.target import Target, as_target, host_arch
from tunecli.errors import ArgumentError, CodegenError, TargetError

from . import compile as cc
from .parallel import num_threads_symbol
from .runtime import get_num_threads, load_libgomp
from .timer import time_calls


@dataclass(frozen=True)
class ArgSpec:
    """One kernel argument: its name, static shape, dtype string, and whether the kernel writes it."""

    name: str
    shape: tuple[int, ...]
    dtype: str
    is_output: bool = False


_jit_state: dict[str, Any] = {}
_library_ids = itertools.count()


def _jit():
    """This process's LLJIT (created on first use)."""
    if "jit" not in _jit_state:
        cc._init_llvm()
        host = Target("llvm")
        tm = llvm.Target.from_triple(host.llvm_triple).create_target_machine(
            cpu=host.llvm_cpu, features=host.llvm_features, opt=3, reloc="pic")
        _jit_state["jit"] = llvm.create_lljit_compiler(tm)
    return _jit_state["jit"]


class Module:
    """A compiled kernel.

    Parameters
    ----------
    obj : bytes
        Relocatable object file for ``target``.
    entry_name : str
        Symbol of ``void entry(void*, ...)`` in the object.
    arg_specs : sequence of ArgSpec
        The arguments, in call order.
    target : Target
        What the object was compiled for.
    ir_text : str, optional
        Optimised LLVM IR (absent for modules loaded from an object).
    """

    def __init__(self, obj: bytes, entry_name: str, arg_specs: Sequence[ArgSpec], target: Target,
                 ir_text: str | None = None):
        self._obj = bytes(obj)
        self.entry_name = entry_name
        self.arg_specs = [a if isinstance(a, ArgSpec) else ArgSpec(*a) for a in arg_specs]
        self.target = target
        self._ir = ir_text
        self._func: Callable[..., None] | None = None
        self._tracker = None
        self._threads: ctypes.c_int32 | None = None
        self._dtypes = [np.dtype(a.dtype) for a in self.arg_specs]

    # the object and its sources --------------------------------------------------------------
    def object_bytes(self) -> bytes:
        """The relocatable object file (ELF for Linux targets)."""
        return self._obj

    def get_source(self, fmt: str = "ll") -> str:
        """Optimised LLVM IR (``"ll"``) or assembly (``"asm"``/``"s"``) of the kernel."""
        fmt = fmt or "ll"
        if fmt not in ("ll", "asm", "s"):
            raise CodegenError(f"Module.get_source: unknown format {fmt!r}; use 'll' or 'asm'")
        if self._ir is None:
            raise CodegenError(f"Module.get_source: module {self.entry_name!r} was loaded from an object "
                               "file and has no source")
        return self._ir if fmt == "ll" else cc.assembly(self._ir, self.target)

    def save(self, path: str | os.PathLike) -> None:
        """Write the object (``.o``), LLVM IR (``.ll``) or assembly (``.s``) to ``path``."""
        suffix = os.path.splitext(os.fspath(path))[1]
        if suffix == ".o":
            data: bytes = self._obj
        elif suffix in (".ll", ".s"):
            data = self.get_source("ll" if suffix == ".ll" else "asm").encode()
        else:
            raise CodegenError(f"Module.save: cannot tell the format of {os.fspath(path)!r}; "
                               "use a .o, .ll or .s file name")
        with open(path, "wb") as f:
            f.write(data)

    # calling -----------------------------------------------------------------------------------
    @property
    def func(self) -> Callable[..., None]:
        """The ctypes function of the kernel (one integer address per argument); loads on first use.

        Fetching it also sets the thread count of the kernel's parallel loops to
        :func:`~tunecli.engine.codegen.runtime.get_num_threads` (calls through ``mod(...)`` and
        ``time_evaluator`` refresh it on each call).
        """
        return self._prepare()

    def _load(self) -> None:
        with cc.LOCK:
            if self._func is None:
                self._link()

    def _link(self) -> None:
        if not self.target.is_host:
            raise TargetError(f"module {self.entry_name!r} was compiled for {str(self.target)!r} "
                              f"({self.target.llvm_triple}) and cannot run on this machine")
        _check_object_machine(self._obj, self.entry_name)
        jit = _jit()
        if b"GOMP_parallel" in self._obj:
            load_libgomp()  # parallel loops: the JIT resolves GOMP_* from the process
        threads_name = num_threads_symbol(self.entry_name)
        has_threads = threads_name.encode() in self._obj
        builder = llvm.JITLibraryBuilder().add_object_img(self._obj).add_current_process()
        builder.export_symbol(self.entry_name)
        if has_threads:
            builder.export_symbol(threads_name)
        try:
            tracker = builder.link(jit, f"tunecli_kernel{next(_library_ids)}")
        except RuntimeError as err:
            raise CodegenError(f"module {self.entry_name!r}: the object could not be linked: {err}") from None
        address = tracker[self.entry_name]
        if not address:
            raise CodegenError(f"module: symbol {self.entry_name!r} is not defined in the object")
        if has_threads and tracker[threads_name]:
            self._threads = ctypes.c_int32.from_address(tracker[threads_name])
        self._tracker = tracker
        self._func = ctypes.CFUNCTYPE(None, *([ctypes.c_void_p] * len(self.arg_specs)))(address)

    def pointers(self, arrays: Sequence[Any]) -> list[int]:
        """Check ``arrays`` against the argument specs and return their data addresses."""
        if len(arrays) != len(self.arg_specs):
            raise ArgumentError(f"{self.entry_name} takes {len(self.arg_specs)} arrays "
                                f"({', '.join(a.name for a in self.arg_specs)}), got {len(arrays)}")
        out = []
        for k, (arr, spec, dt) in enumerate(zip(arrays, self.arg_specs, self._dtypes, strict=True)):
            where = f"{self.entry_name}: argument {k} ({spec.name!r})"
            if not isinstance(arr, np.ndarray):
                raise ArgumentError(f"{where} must be a numpy array, got {type(arr).__name__}")
            if arr.dtype != dt:
                raise ArgumentError(f"{where} must have dtype {spec.dtype}, got {arr.dtype}")
            if tuple(arr.shape) != tuple(spec.shape):
                raise ArgumentError(f"{where} must have shape {tuple(spec.shape)}, got {tuple(arr.shape)}")
            if not arr.flags.c_contiguous:
                raise ArgumentError(f"{where} must be C-contiguous (use np.ascontiguousarray)")
            if spec.is_output and not arr.flags.writeable:
                raise ArgumentError(f"{where} is an output and must be a writable array")
            out.append(arr.ctypes.data)
        _check_disjoint(self.entry_name, arrays, self.arg_specs)
        return out

    def _prepare(self) -> Callable[..., None]:
        if self._func is None:
            self._load()
        assert self._func is not None
        if self._threads is not None:
            self._threads.value = get_num_threads()
        return self._func

    def __call__(self, *arrays: np.ndarray) -> None:
        """Run the kernel on numpy arrays (outputs are written in place)."""
        pointers = self.pointers(arrays)
        self._prepare()(*pointers)

    def time_evaluator(self, *args: Any, **kwargs: Any) -> Callable[..., Any]:
        """A timing function, in either of two forms (TVM's semantics for both).

        ``time_evaluator(number=10, repeat=1, min_repeat_ms=0, warmup_ms=0)`` (also positional)
        returns ``f(*arrays) -> [seconds per call, one per repeat]``; ``warmup_ms`` (not in TVM)
        runs the kernel untimed that long first (see :mod:`tunecli.engine.measure.timing`).

        ``time_evaluator(func_name, dev, number=10, repeat=1, min_repeat_ms=0, ...)`` is TVM's
        ``Module.time_evaluator``: ``func_name`` must be :attr:`entry_name`, ``dev`` the CPU
        (``tunecli.cpu()``), and the returned function gives a :class:`BenchmarkResult` with
        ``.mean``, ``.median``, ``.std``, ``.min``, ``.max`` and ``.results``.
        """
        if (args and isinstance(args[0], str)) or "func_name" in kwargs:
            return self._tvm_time_evaluator(*args, **kwargs)
        return self._list_time_evaluator(*args, **kwargs)

    def _list_time_evaluator(self, number: int = 10, repeat: int = 1, min_repeat_ms: float = 0.0,
                             warmup_ms: float = 0.0) -> Callable[..., list[float]]:
        def evaluate(*arrays: np.ndarray) -> list[float]:
            pointers = self.pointers(arrays)
            return time_calls(self._prepare(), pointers, number, repeat, min_repeat_ms, warmup_ms=warmup_ms)

        return evaluate

    def _tvm_time_evaluator(self, func_name: str, dev: Any = None, number: int = 10, repeat: int = 1,
                            min_repeat_ms: float = 0.0, limit_zero_time_iterations: int = 100,
                            cooldown_interval_ms: float = 0.0, repeats_to_cooldown: int = 1,
                            cache_flush_bytes: int = 0, f_preproc: str = ""
                            ) -> Callable[..., BenchmarkResult]:
        where = f"time_evaluator of {self.entry_name!r}"
        if func_name != self.entry_name:
            raise ArgumentError(f"{where}: no function named {func_name!r}; this module's function is "
                                f"{self.entry_name!r} (use mod.entry_name)")
        not_cpu = (dev.split()[:1] not in (["cpu"], ["llvm"]) if isinstance(dev, str)
                   else dev is not None and getattr(dev, "device_type", 1) != 1)
        if not_cpu:
            raise ArgumentError(f"{where}: kernels run on the CPU; got device {dev!r}")
        if cache_flush_bytes or f_preproc:
            raise ArgumentError(f"{where}: cache_flush_bytes and f_preproc are not supported")
        if cooldown_interval_ms < 0 or repeats_to_cooldown < 1:
            raise ArgumentError(f"{where}: need cooldown_interval_ms >= 0 and repeats_to_cooldown >= 1, got "
                                f"{cooldown_interval_ms} and {repeats_to_cooldown}")
        del limit_zero_time_iterations  # the timer never measures zero time: nothing to limit

        def evaluate(*arrays: np.ndarray) -> BenchmarkResult:
            pointers = self.pointers(arrays)
            batches = itertools.count()

            def cooldown() -> None:
                k = next(batches)
                if cooldown_interval_ms > 0 and k > 0 and k % repeats_to_cooldown == 0:
                    time.sleep(cooldown_interval_ms / 1e3)

            return BenchmarkResult(time_calls(self._prepare(), pointers, number, repeat, min_repeat_ms,
                                              before_repeat=cooldown))

        return evaluate

    def __repr__(self) -> str:
        return f"Module({self.entry_name!r}, target={str(self.target)!r}, args={len(self.arg_specs)})"


class BenchmarkResult:
    """What TVM's ``time_evaluator`` returns: seconds per call, one per repeat, and their statistics."""

    def __init__(self, results: Sequence[float]):
        self.results: tuple[float, ...] = tuple(float(r) for r in results)
        arr = np.asarray(self.results)
        self.mean = float(arr.mean())
        self.median = float(np.median(arr))
        self.std = float(arr.std())
        self.min = float(arr.min())
        self.max = float(arr.max())

    def __repr__(self) -> str:
        return (f"BenchmarkResult(min={self.min:.6g}, mean={self.mean:.6g}, median={self.median:.6g}, "
                f"max={self.max:.6g}, std={self.std:.6g}, results={list(self.results)})")


def _check_disjoint(entry: str, arrays: Sequence[np.ndarray], specs: Sequence[ArgSpec]) -> None:
    """Arguments are ``noalias`` in the kernel: reject arrays whose memory overlaps."""
    spans = sorted((a.ctypes.data, a.ctypes.data + a.nbytes, k) for k, a in enumerate(arrays) if a.nbytes)
    for (_, end, k), (start, _, j) in zip(spans, spans[1:], strict=False):
        if start < end:
            first, second = sorted((k, j))
            raise ArgumentError(f"{entry}: arguments {first} ({specs[first].name!r}) and {second} "
                                f"({specs[second].name!r}) share memory; pass separate arrays")


_ELF_MACHINES = {3: "x86", 40: "ARM", 62: "x86_64", 183: "AArch64", 243: "RISC-V"}
_HOST_ELF_MACHINE = {"x86_64": 62, "aarch64": 183, "arm": 40, "armv7l": 40, "riscv64": 243}


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


def load_module(obj: bytes, entry_name: str, arg_specs: Sequence[ArgSpec | tuple],
                target: Target | str | None = None) -> Module:
    """Make a callable :class:`Module` from an object file built by :func:`tunecli.engine.build.build`.

    Parameters
    ----------
    obj : bytes
        Relocatable object for this machine.
    entry_name : str
        The kernel's symbol.
    arg_specs : sequence of ArgSpec or (name, shape, dtype[, is_output]) tuples
        The kernel's arguments in call order.
    target : Target or str, optional
        The target the object was built for (default: the host).

    Returns
    -------
    Module
        Loaded lazily: linking happens on the first call (errors are CodegenError).
    """
    t = as_target(target) if target is not None else Target("llvm")
    specs = [a if isinstance(a, ArgSpec) else ArgSpec(a[0], tuple(a[1]), str(a[2]), *a[3:])
             for a in arg_specs]
    return Module(obj, entry_name, specs, t)
