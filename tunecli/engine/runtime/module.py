"""Compiled kernels as users call them: :class:`Module` (what ``build`` returns) and :func:`load_module`.

A module wraps the :class:`~tunecli.engine.codegen.CompiledKernel` record codegen produced and
runs it on the device of its target (:func:`~tunecli.engine.runtime.devices.device_for_target`),
loading it there the first time it is called; the same path loads an object produced by another
process.  Sources (``get_source``, ``save``) come from the record.  ``export_library`` writes it
for a device to load (:mod:`.kernel_export`; ``runtime.load_module(path)`` or, on a device server,
``remote.load_module(name)`` loads it back).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from tunecli.engine.codegen import ArgSpec, CompiledKernel
from tunecli.engine.codegen.compile import assembly
from tunecli.engine.codegen.compiled_kernel import LaunchShape
from tunecli.engine.target import Target, as_target
from tunecli.errors import ArgumentError, CodegenError

from .device import Device, DeviceArray, LoadedKernel
from .devices import device_for_target
from .linker import CompileFunc
from .timer import cooldown_pause


class Module:
    """A compiled kernel, callable on arrays of its device.

    Parameters
    ----------
    kernel : CompiledKernel
        What codegen produced (or an object built elsewhere, see :func:`load_module`).
    loaded : optional
        The kernel already loaded on its device (a module opened from an exported shared library:
        ``kernel`` then has no object bytes).
    """

    def __init__(self, kernel: CompiledKernel, loaded: LoadedKernel | None = None):
        self.kernel = kernel
        self._device: Device | None = None
        self._loaded = loaded

    @property
    def entry_name(self) -> str:
        """Symbol of the kernel."""
        return self.kernel.entry_name

    @property
    def arg_specs(self) -> list[ArgSpec]:
        """The arguments, in call order."""
        return list(self.kernel.arg_specs)

    @property
    def target(self) -> Target:
        """What the kernel was compiled for."""
        return self.kernel.target

    @property
    def launch(self) -> LaunchShape | None:
        """Grid and block of a GPU kernel; None for a CPU kernel."""
        return self.kernel.launch

    @property
    def device(self) -> Device:
        """The device that runs the kernel (from the target)."""
        if self._device is None:
            self._device = device_for_target(self.kernel.target)
        return self._device

    # TVM's runtime.Module faces -----------------------------------------------------------------
    @property
    def type_key(self) -> str:
        """The kind of module (TVM's ``type_key``): ``"llvm"``, the host module of every target."""
        return "llvm"

    @property
    def imported_modules(self) -> list[DeviceCodeModule]:
        """The device code of a GPU kernel (``[module]`` whose ``get_source()`` is the PTX, TVM's
        ``fadd.imported_modules[0].get_source()``); empty for a CPU kernel."""
        return [DeviceCodeModule(self)] if self.kernel.object_format == "ptx" else []

    @property
    def entry_func(self) -> Module:
        """The module's function (TVM's ``entry_func``); a module is called like its function."""
        return self

    def get_function(self, name: str, query_imports: bool = False) -> Module:
        """The function named ``name`` (TVM's ``get_function``): the kernel, callable on arrays of
        its device; ``query_imports`` is accepted (a module imports no other functions).

        Raises
        ------
        ArgumentError
            When ``name`` is not :attr:`entry_name`.
        """
        del query_imports
        if not isinstance(name, str):
            raise ArgumentError(f"module {self.entry_name!r}: a function name must be a str, got {name!r}")
        if name != self.entry_name:
            raise ArgumentError(f"module {self.entry_name!r}: no function named {name!r}; its function is "
                                f"{self.entry_name!r} (the name= given to build)")
        return self

    def __getitem__(self, name: str) -> Module:
        """``mod[name]``: the same as :meth:`get_function`."""
        return self.get_function(name)

    # the object and its sources --------------------------------------------------------------
    def object_bytes(self) -> bytes:
        """The relocatable object file (ELF for Linux targets)."""
        if not self.kernel.obj:
            raise CodegenError(f"module {self.entry_name!r} was loaded from a shared library and has no "
                               "object file")
        return self.kernel.obj

    def get_source(self, fmt: str = "ll") -> str:
        """Optimised LLVM IR (``"ll"``) or assembly (``"asm"``/``"s"``; PTX, also ``"ptx"``, for a
        CUDA kernel) of the kernel."""
        fmt = fmt or "ll"
        if self.kernel.object_format == "ptx" and fmt in ("asm", "s", "ptx"):
            return self.kernel.obj.decode()
        if fmt not in ("ll", "asm", "s"):
            raise CodegenError(f"Module.get_source: unknown format {fmt!r}; use 'll' or 'asm'")
        ir_text = self.kernel.ir_text
        if ir_text is None:
            raise CodegenError(f"Module.get_source: module {self.entry_name!r} was loaded from an object "
                               "file and has no source")
        return ir_text if fmt == "ll" else assembly(ir_text, self.target)

    def save(self, path: str | os.PathLike) -> None:
        """Write the object (``.o``; ``.ptx`` for a CUDA kernel), LLVM IR (``.ll``) or assembly
        (``.s``) to ``path``; beside an ``.o`` goes ``<path>.tunecli_blob``, the kernel's arguments,
        which ``cc.create_shared([path])`` links in so ``runtime.load_module`` of that library
        gives this module back."""
        suffix = os.path.splitext(os.fspath(path))[1]
        if suffix == ".o" and self.kernel.object_format != "ptx":
            from .kernel_export import save_object  # the export formats build on this module

            save_object(self, path)
            return
        if suffix == ".o" or (suffix == ".ptx" and self.kernel.object_format == "ptx"):
            data: bytes = self.object_bytes()
        elif suffix in (".ll", ".s"):
            data = self.get_source("ll" if suffix == ".ll" else "asm").encode()
        else:
            raise CodegenError(f"Module.save: cannot tell the format of {os.fspath(path)!r}; "
                               "use a .o, .ll or .s file name (.ptx for a CUDA kernel)")
        with open(path, "wb") as f:
            f.write(data)

    def export_library(self, file_name: str | os.PathLike, fcompile: str | CompileFunc | None = None,
                       addons: Sequence[Module] | None = None, workspace_dir: str | None = None, *,
                       cc: str | CompileFunc | None = None, options: list[str] | None = None,
                       **kwargs: object) -> None:
        """Write the kernel for a device to load (TVM's ``export_library``).

        Parameters
        ----------
        file_name : str or PathLike
            ``lib.so``: a shared library (host code only); ``lib.tar``: its object (PTX for a CUDA
            kernel) and its arguments, which a device server loads itself.  Either loads back with
            ``runtime.load_module(file_name)``, or ``remote.upload(file_name)`` then
            ``remote.load_module(name)`` on a device server.
        fcompile, cc : str or callable, optional
            The C compiler driver (``"aarch64-linux-gnu-gcc"``) or a compile function
            (``contrib.cc.cross_compiler(...)``); default: a driver for the target on the PATH.
        options : list of str, optional
            Extra link options.

        Raises
        ------
        GraphError
            When no driver links for the target, a ``.so`` is asked of a CUDA kernel, or linking fails.
        """
        from .kernel_export import export_module  # the export formats build on this module

        if addons:
            raise ArgumentError("export_library: addons (extra modules to link) are not supported")
        export_module(self, file_name, fcompile if fcompile is not None else cc, options)

    # running -----------------------------------------------------------------------------------
    def loaded(self) -> LoadedKernel:
        """The kernel loaded on its device (loaded on first use)."""
        if self._loaded is None:
            self._loaded = self.device.load(self.kernel)
        return self._loaded

    def __call__(self, *arrays: DeviceArray) -> None:
        """Run the kernel on arrays of its device (outputs are written in place)."""
        self.device.launch(self.loaded(), arrays)

    def time_evaluator(self, *args: Any, **kwargs: Any) -> Callable[..., list[float] | BenchmarkResult]:
        """A timing function, in either of two forms (TVM's semantics for both).

        ``time_evaluator(number=10, repeat=1, min_repeat_ms=0, warmup_ms=0)`` (also positional)
        returns ``f(*arrays) -> [seconds per call, one per repeat]``; ``warmup_ms`` (not in TVM)
        runs the kernel untimed that long first (see :mod:`tunecli.engine.measure.timing`).

        ``time_evaluator(func_name, dev, number=10, repeat=1, min_repeat_ms=0, ...)`` is TVM's
        ``Module.time_evaluator``: ``func_name`` must be :attr:`entry_name`, ``dev`` the module's
        device (``tunecli.cpu()`` for ``llvm`` targets), and the returned function gives a
        :class:`BenchmarkResult` with ``.mean``, ``.median``, ``.std``, ``.min``, ``.max`` and
        ``.results``; ``ctx=`` is the older name of ``dev``.
        """
        if (args and isinstance(args[0], str)) or "func_name" in kwargs:
            return self._tvm_time_evaluator(*args, **kwargs)
        return self._list_time_evaluator(*args, **kwargs)

    def _list_time_evaluator(self, number: int = 10, repeat: int = 1, min_repeat_ms: float = 0.0,
                             warmup_ms: float = 0.0) -> Callable[..., list[float]]:
        def evaluate(*arrays: DeviceArray) -> list[float]:
            return self.device.time(self.loaded(), arrays, number, repeat, min_repeat_ms, warmup_ms=warmup_ms)

        return evaluate

    def _tvm_time_evaluator(self, func_name: str, dev: object = None, number: int = 10, repeat: int = 1,
                            min_repeat_ms: float = 0.0, limit_zero_time_iterations: int = 100,
                            cooldown_interval_ms: float = 0.0, repeats_to_cooldown: int = 1,
                            cache_flush_bytes: int = 0, f_preproc: str = "", ctx: object = None
                            ) -> Callable[..., BenchmarkResult]:
        where = f"time_evaluator of {self.entry_name!r}"
        if ctx is not None:  # TVM's older name of dev
            if dev is not None:
                raise ArgumentError(f"{where}: give the device once, as dev (ctx is its older name)")
            dev = ctx
        if func_name != self.entry_name:
            raise ArgumentError(f"{where}: no function named {func_name!r}; this module's function is "
                                f"{self.entry_name!r} (use mod.entry_name)")
        if dev is not None and not self._runs_on(dev):
            raise ArgumentError(f"{where}: the kernel runs on {self.device.label} ({self.device!r}); "
                                f"got device {dev!r}")
        if cache_flush_bytes or f_preproc:
            raise ArgumentError(f"{where}: cache_flush_bytes and f_preproc are not supported")
        if cooldown_interval_ms < 0 or repeats_to_cooldown < 1:
            raise ArgumentError(f"{where}: need cooldown_interval_ms >= 0 and repeats_to_cooldown >= 1, got "
                                f"{cooldown_interval_ms} and {repeats_to_cooldown}")
        del limit_zero_time_iterations  # the timer never measures zero time: nothing to limit

        def evaluate(*arrays: DeviceArray) -> BenchmarkResult:
            pause = cooldown_pause(cooldown_interval_ms, repeats_to_cooldown)
            return BenchmarkResult(self.device.time(self.loaded(), arrays, number, repeat, min_repeat_ms,
                                                    before_repeat=pause))

        return evaluate

    def _runs_on(self, dev: object) -> bool:
        """Whether ``dev`` (a device, a device or target name, or a DLPack-style handle) is ours."""
        mine = self.device
        if isinstance(dev, Device):
            return dev.device_type == mine.device_type
        if isinstance(dev, str):
            return bool(dev.split()) and dev.split()[0] in mine.names
        return getattr(dev, "device_type", None) == mine.device_type

    def __repr__(self) -> str:
        return f"Module({self.entry_name!r}, target={str(self.target)!r}, args={len(self.kernel.arg_specs)})"


class DeviceCodeModule:
    """The device code a GPU kernel's module imports (TVM's ``imported_modules[0]``): its source."""

    type_key = "cuda"

    def __init__(self, host: Module):
        self.host = host

    @property
    def imported_modules(self) -> list[DeviceCodeModule]:
        """Device code imports nothing."""
        return []

    def get_source(self, fmt: str = "") -> str:
        """The kernel's PTX (TVM's device module gives CUDA C for ``""`` and ``"cu"``; this
        runtime compiles to PTX only, so every format gives the PTX)."""
        del fmt
        return self.host.kernel.obj.decode()

    def save(self, path: str | os.PathLike) -> None:
        """Write the PTX to ``path`` (TVM's ``imported_modules[0].save("myadd.ptx")``)."""
        with open(path, "wb") as f:
            f.write(self.host.kernel.obj)

    def __repr__(self) -> str:
        return f"DeviceCodeModule({self.host.entry_name!r}, type_key='cuda')"


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

    def __str__(self) -> str:
        """TVM's summary: mean, median, max, min and standard deviation in milliseconds."""
        names = ("mean", "median", "max", "min", "std")
        header = " ".join(f"{name + ' (ms)':^12}" for name in names)
        values = " ".join(f"{getattr(self, name) * 1e3:^12.4f}" for name in names)
        return f"Execution time summary:\n{header}\n{values}"


def load_module(obj: bytes, entry_name: str, arg_specs: Sequence[ArgSpec | tuple],
                target: Target | str | None = None) -> Module:
    """A callable :class:`Module` of an object file built by :func:`tunecli.engine.build.build`.

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
        Loaded on its device on the first call (errors are CodegenError / TargetError).
    """
    t = as_target(target) if target is not None else Target("llvm")
    specs = tuple(a if isinstance(a, ArgSpec) else ArgSpec(a[0], tuple(a[1]), str(a[2]), *a[3:])
                  for a in arg_specs)
    return Module(CompiledKernel(bytes(obj), entry_name, specs, t))
