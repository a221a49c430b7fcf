"""A built network as the runtime sees it (TVM's ``GraphExecutorFactoryModule``) and the exported
shared library format.

:class:`GraphLibrary` holds the graph JSON, the kernels and the parameters; ``lib["default"](dev)``
gives a :class:`GraphModule`.  An exported library is one ELF shared object: the kernels' code
(each kernel ``void name(void*...)`` and its ``name__num_threads`` global) linked together, and
one data blob at the symbols ``tunecli_graph_blob`` / ``tunecli_graph_blob_size``:
``MAGIC``, a little-endian u64 header length, the header (JSON: graph, kernel names and
argument counts, parameter names, dtypes, shapes and offsets, the target), then the parameters'
bytes, each 64-byte aligned from the blob's start.  :func:`load_module` opens such a file with the
dynamic loader: nothing is compiled, the parameters are read in place; a library for another
processor is refused before it is opened.  ``.tar`` archives (objects, graph and parameters, for
a device to load itself) are :mod:`.graph_archive`'s.  A kernel module's library or archive
(``Module.export_library``) has the same layout with no graph: its header's ``module`` names the
entry and its arguments, and loading it gives a :class:`~.module.Module`.

:class:`CompiledGraph` is a library whose kernels are compiled-kernel records (a build, or an
archive opened): it runs them on the CPU, or on a GPU for a ``cuda`` build, and refuses, with
one error, kernels compiled for a processor other than this machine's.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import math
import os
import struct
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from tunecli.engine.codegen import ArgSpec, CompiledKernel
from tunecli.engine.codegen.parallel import num_threads_symbol, parallel_for_symbol
from tunecli.engine.target import Target, as_target, host_triple
from tunecli.errors import ArgumentError, TargetError

from .cpu import CPUKernel, _check_object_machine
from .cuda import CUDADevice
from .cuda_graph_executor import CUDAGraphExecutor
from .device import Device
from .devices import as_device, device_for_target
from .graph_executor import Executor, GraphExecutor, GraphModule
from .heap import keep_scratch_memory
from .linker import BLOB_SIZE_SYMBOL, BLOB_SYMBOL
from .module import Module
from .module import load_module as load_object
from .threads import bind_thread_pool

MAGIC = b"TUNECLI-GRAPH\x00\x01\x00"
_ALIGN = 64
__all__ = ["BLOB_SIZE_SYMBOL", "BLOB_SYMBOL", "MAGIC", "CompiledGraph", "GraphLibrary", "executor_for",
           "load_graph_library", "load_module", "pack_blob", "unpack_blob"]


class GraphLibrary:
    """A network's graph, kernels and parameters (what ``relay.build`` returns, and what
    ``load_module`` gives for an exported library).

    Parameters
    ----------
    graph_json : str
    load_kernels : callable
        ``load_kernels() -> {func_name: loaded kernel}`` (called once, on first use).
    params : mapping of str to array
    libmod_name : str
        The key of ``lib[...]`` (TVM's ``"default"``).
    """

    def __init__(
        self,
        graph_json: str,
        load_kernels: Callable[[], Mapping[str, CPUKernel]],
        params: Mapping[str, np.ndarray],
        libmod_name: str = "default",
    ):
        self.graph_json = graph_json
        self.params = dict(params)
        self.libmod_name = libmod_name
        self._load_kernels = load_kernels
        self._kernels: Mapping[str, CPUKernel] | None = None

    def __getitem__(self, key: str) -> Callable[..., GraphModule]:
        if key != self.libmod_name:
            raise ArgumentError(f"graph library: no function {key!r}; use lib[{self.libmod_name!r}](dev)")
        return self.create

    def get_function(self, name: str, query_imports: bool = False) -> Callable[..., GraphModule]:
        """``lib.get_function("default")``: the same as ``lib["default"]``."""
        del query_imports
        return self[name]

    def __iter__(self) -> Iterator[object]:
        """TVM's older form of ``relay.build``'s result: ``graph, lib, params = relay.build(...)``
        gives the graph JSON, this library (for ``graph_executor.create(graph, lib, dev)`` or
        ``export_library``) and the parameters."""
        return iter((self.get_graph_json(), self, self.get_params()))

    def create(self, device: Device | str | None = None) -> GraphModule:
        """A new executor of the graph (own buffers; shared read-only parameters)."""
        return GraphModule(GraphExecutor(self.graph_json, self.loaded_kernels(), self.params))

    def loaded_kernels(self) -> Mapping[str, CPUKernel]:
        """The kernels loaded on their device, by function name (loaded on first use)."""
        if self._kernels is None:
            self._kernels = self._load_kernels()
        return self._kernels

    def get_graph_json(self) -> str:
        """The graph JSON (TVM's format)."""
        return self.graph_json

    def get_params(self) -> dict[str, np.ndarray]:
        """The parameters the graph reads, by name."""
        return dict(self.params)


class CompiledGraph(GraphLibrary):
    """A library of compiled-kernel records for one target (what ``relay.build`` returns and what an
    opened archive gives).

    Parameters
    ----------
    graph_json : str
    kernels : dict of str to CompiledKernel
    params : mapping of str to array
    target : Target
    libmod_name : str
    """

    def __init__(self, graph_json: str, kernels: dict[str, CompiledKernel], params: Mapping[str, np.ndarray],
                 target: Target, libmod_name: str = "default"):
        self.kernels = kernels
        self.target = target
        super().__init__(graph_json, self._load_here, params, libmod_name)

    def _load_here(self) -> dict[str, CPUKernel]:
        device = device_for_target(self.target)
        return {n: device.load(k) for n, k in self.kernels.items()}

    def runs_here(self) -> str:
        """Why this machine cannot run the kernels ("" when it can; a GPU build: when it has a GPU)."""
        if self.target.is_gpu or self.target.is_host:
            return ""
        return (f"graph library: its kernels were compiled for {str(self.target)!r} "
                f"({self.target.llvm_triple}) and cannot run on this machine ({host_triple()}); export it "
                "(lib.export_library(path, ...)) and run it on a device of that kind (rpc: remote.upload, "
                "remote.load_module)")

    def create(self, device: Device | str | None = None) -> GraphModule:
        """A new executor of the graph on ``device`` (a CUDA build: ``tunecli.cuda(n)``, the default
        ``cuda(0)``; its parameters are copied to the GPU).

        Raises
        ------
        TargetError
            When the kernels were compiled for another processor than this machine's.
        """
        problem = self.runs_here()
        if problem:
            raise TargetError(problem)
        if not self.target.is_gpu:
            return super().create(device)
        dev = device_for_target(self.target) if device is None else as_device(device, "graph executor")
        if not isinstance(dev, CUDADevice):
            raise ArgumentError(
                f"graph executor: this build's kernels are PTX for {str(self.target)!r}; run it on a GPU "
                f"with lib[{self.libmod_name!r}](tunecli.cuda(0)), not on {dev!r}"
            )
        return GraphModule(CUDAGraphExecutor(self.graph_json, self.kernels, self.params, dev))


def executor_for(graph_json: str, libmod: GraphLibrary | Mapping[str, Module],
                 device: Device | str | None = None) -> Executor:
    """An executor of ``graph_json`` running the kernels of ``libmod`` (the arguments of TVM's
    ``graph_executor.create``).

    Parameters
    ----------
    graph_json : str
    libmod : GraphLibrary or mapping of str to Module
        A built or loaded library (``relay.build(...)``, ``runtime.load_module(path)``; its
        parameters are bound), or the kernels by name that ``lib.get_lib()`` gives (the parameters
        are then set with ``set_input(**lib.get_params())``, as in TVM).
    device : Device, optional
        Where to run: a GPU for kernels built for CUDA (default: the kernels' device).
    """
    if isinstance(libmod, GraphLibrary):
        if graph_json == libmod.graph_json:
            return libmod.create(device).executor
        return GraphExecutor(graph_json, libmod.loaded_kernels(), libmod.params)
    if isinstance(libmod, Mapping) and libmod and all(isinstance(m, Module) for m in libmod.values()):
        modules: dict[str, Module] = dict(libmod)
        own = next(iter(modules.values())).device
        if isinstance(own, CUDADevice):
            dev = own if device is None else as_device(device, "graph executor")
            if not isinstance(dev, CUDADevice):
                raise ArgumentError(f"graph executor: the kernels are for {own.label}; got device {dev!r}")
            return CUDAGraphExecutor(graph_json, {n: m.kernel for n, m in modules.items()}, {}, dev)
        return GraphExecutor(graph_json, {n: m.loaded() for n, m in modules.items()}, {})
    raise ArgumentError(
        "graph executor: libmod must be a built or loaded library (relay.build(...), load_module(path)) "
        f"or lib.get_lib(), got {type(libmod).__name__}"
    )


def pack_blob(graph_json: str, kernel_args: Mapping[str, int], params: Mapping[str, ArrayLike],
              target: str | None = None, module: CompiledKernel | None = None) -> bytes:
    """The data blob of an exported library (see the module docstring); ``kernel_args``: kernel
    name -> number of pointer arguments; ``target``: what the kernels were compiled for;
    ``module``: the kernel of a kernel module's library (its entry and arguments are recorded)."""
    entries, chunks, offset = [], [], 0
    arrays = {name: np.ascontiguousarray(np.asarray(v)) for name, v in params.items()}
    for name, arr in arrays.items():
        entries.append({"name": name, "dtype": str(arr.dtype), "shape": list(arr.shape), "offset": offset})
        chunks.append(arr.tobytes())
        offset += -(-arr.nbytes // _ALIGN) * _ALIGN
    fields: dict[str, object] = {"graph_json": graph_json, "kernels": dict(kernel_args), "params": entries,
                              "target": target}
    if module is not None:
        fields["module"] = {"entry_name": module.entry_name, "arg_specs": specs_json(module.arg_specs)}
    header = json.dumps(fields).encode()
    start = _params_start(len(header))
    out = bytearray(MAGIC + struct.pack("<Q", len(header)) + header)
    out += bytes(start - len(out))
    for entry, chunk in zip(entries, chunks, strict=True):
        out += bytes(start + entry["offset"] - len(out))
        out += chunk
    return bytes(out)


def specs_json(specs: Sequence[ArgSpec]) -> list[list]:
    """Argument specs as JSON rows ``[name, shape, dtype, is_output]``."""
    return [[a.name, list(a.shape), a.dtype, a.is_output] for a in specs]


def specs_from_json(rows: Sequence[Sequence[Any]]) -> tuple[ArgSpec, ...]:
    """The argument specs :func:`specs_json` wrote."""
    return tuple(ArgSpec(str(n), tuple(int(d) for d in shape), str(dtype), bool(out))
                 for n, shape, dtype, out in rows)


def _params_start(header_len: int) -> int:
    return -(-(len(MAGIC) + 8 + header_len) // _ALIGN) * _ALIGN


def unpack_blob(blob: bytes | ctypes.Array[ctypes.c_char], where: str) -> tuple[dict, dict[str, np.ndarray]]:
    """The header and the parameters (read-only views of ``blob``) of a blob :func:`pack_blob` wrote.

    Raises
    ------
    ArgumentError
        Naming ``where`` when ``blob`` is not one.
    """
    if bytes(blob[: len(MAGIC)]) != MAGIC:
        raise ArgumentError(f"load_module: {where!r} has no tunecli graph (wrong magic)")
    (hlen,) = struct.unpack("<Q", bytes(blob[len(MAGIC) : len(MAGIC) + 8]))
    try:
        header = json.loads(bytes(blob[len(MAGIC) + 8 : len(MAGIC) + 8 + hlen]))
    except ValueError as err:
        raise ArgumentError(f"load_module: {where!r} has a damaged graph header ({err})") from None
    start = _params_start(hlen)
    params = {}
    for p in header["params"]:
        dtype = np.dtype(p["dtype"])
        count = math.prod(p["shape"])
        arr = np.frombuffer(blob, dtype=dtype, count=count, offset=start + p["offset"]).reshape(p["shape"])
        arr.flags.writeable = False
        params[p["name"]] = arr
    return header, params


def library_target(header: dict, where: str) -> Target | None:
    """The target a library's kernels were compiled for (None for a library that does not say).

    Raises
    ------
    TargetError
        When its kernels are CPU code this machine cannot run.
    """
    if not header.get("target"):
        return None
    target = as_target(header["target"])
    if not target.is_gpu and not target.is_host:
        raise TargetError(f"load_module: {where!r} holds kernels compiled for {str(target)!r} "
                          f"({target.llvm_triple}), which cannot run on this machine ({host_triple()})")
    return target


def load_graph_library(path: str | os.PathLike) -> GraphLibrary | Module:
    """Open a library written by ``export_library`` (ArgumentError naming the file when it is not one,
    TargetError when it is for another processor): a network's gives a :class:`GraphLibrary`, a
    kernel module's a :class:`Module`; a ``.tar`` archive is opened by
    :func:`.graph_archive.load_graph_archive`."""
    where = os.fspath(path)
    if not os.path.isfile(where):
        raise ArgumentError(f"load_module: no such file {where!r}")
    if where.endswith(".tar"):
        from .graph_archive import load_graph_archive  # the archive format builds on this module

        return load_graph_archive(where)
    with open(where, "rb") as f:
        _check_object_machine(f.read(20), os.path.basename(where))
    keep_scratch_memory()
    try:
        lib = ctypes.CDLL(os.path.abspath(where), mode=ctypes.RTLD_LOCAL)
        size = ctypes.c_uint64.in_dll(lib, BLOB_SIZE_SYMBOL).value
        base = ctypes.addressof(ctypes.c_char.in_dll(lib, BLOB_SYMBOL))
    except (OSError, ValueError) as err:
        raise ArgumentError(
            f"load_module: {where!r} is not a library exported by export_library: {err}"
        ) from None
    blob = (ctypes.c_char * size).from_address(base)
    header, params = unpack_blob(blob, where)
    target = library_target(header, where)
    if header.get("module"):
        entry, specs = header["module"]["entry_name"], specs_from_json(header["module"]["arg_specs"])
        record = CompiledKernel(b"", entry, specs, target or as_target("llvm"))
        return Module(record, loaded=_library_kernel(lib, entry, len(specs), specs))

    def load_kernels() -> dict[str, CPUKernel]:
        return {name: _library_kernel(lib, name, num_args) for name, num_args in header["kernels"].items()}

    library = GraphLibrary(header["graph_json"], load_kernels, params)
    library._handle = lib  # type: ignore[attr-defined]  # the code and the parameters live while it does
    return library


def _library_kernel(lib: ctypes.CDLL, name: str, num_args: int, specs: tuple[ArgSpec, ...] = ()) -> CPUKernel:
    """Kernel ``name`` of a loaded library, its parallel loops bound to this process's thread pool."""
    func = getattr(lib, name)
    func.restype = None
    func.argtypes = [ctypes.c_void_p] * num_args
    try:
        threads = ctypes.c_int32.in_dll(lib, num_threads_symbol(name))
    except ValueError:
        threads = None
    with contextlib.suppress(ValueError):  # parallel loops run on the thread pool
        bind_thread_pool(ctypes.addressof(ctypes.c_void_p.in_dll(lib, parallel_for_symbol(name))))
    return CPUKernel(name, specs, func, threads, lib)


def load_module(
    path_or_obj: str | os.PathLike | bytes,
    entry_name: str | None = None,
    arg_specs: Sequence[ArgSpec | tuple] | None = None,
    target: Target | str | None = None,
) -> Module | GraphLibrary:
    """TVM's ``runtime.load_module``: a library exported by ``export_library`` (one path argument),
    or a kernel object (``obj, entry_name, arg_specs[, target]``, see ``module.load_module``)."""
    if entry_name is None and isinstance(path_or_obj, (str, os.PathLike)):
        return load_graph_library(path_or_obj)
    if entry_name is None or arg_specs is None:
        raise ArgumentError(
            "load_module: give a library path, or an object with its entry_name and arg_specs"
        )
    return load_object(path_or_obj, entry_name, arg_specs, target)
