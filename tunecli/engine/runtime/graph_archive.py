"""A built network as a ``.tar`` archive: its kernels' objects, graph and parameters, for a device
to link or load itself (TVM's ``export_library("net.tar")``).

The archive holds ``graph.bin`` (the blob of :func:`.graph_library.pack_blob`: graph JSON,
parameters, target), ``kernels.json`` (format version, target, and per kernel its file, entry
symbol, argument specs, object format and, for GPU code, launch shape) and one file per kernel
(``k<i>.o``: an ELF object; ``k<i>.ptx``: PTX text).  :func:`load_graph_archive` opens one without
a C compiler: CPU objects are linked by this process's JIT, PTX is loaded through the CUDA driver,
each on first use; kernels for another processor are refused when the archive is opened.  A kernel
module's archive (``Module.export_library("lib.tar")``) holds its one kernel and a graph blob that
names it as the module (no graph); opening it gives a :class:`~.module.Module`.
"""

from __future__ import annotations

import io
import json
import os
import tarfile
from collections.abc import Mapping

from numpy.typing import ArrayLike

from tunecli.engine.codegen import CompiledKernel
from tunecli.engine.codegen.compiled_kernel import LaunchShape
from tunecli.engine.target import Target, as_target
from tunecli.errors import ArgumentError

from .cpu import _check_object_machine
from .graph_library import CompiledGraph, library_target, pack_blob, specs_from_json, specs_json, unpack_blob
from .module import Module

#: Version of ``kernels.json``'s layout.
ARCHIVE_FORMAT = 1
#: Largest archive member read back (a kernel object, the graph and parameters).
MAX_MEMBER = 4 << 30


def write_graph_archive(path: str | os.PathLike, graph_json: str, kernels: Mapping[str, CompiledKernel],
                        params: Mapping[str, ArrayLike], target: Target,
                        module: CompiledKernel | None = None) -> None:
    """Write the archive of a network (see the module docstring) to ``path``; ``module``: the kernel
    of a kernel module's archive (``graph_json`` empty, ``kernels`` holding only it)."""
    entries, files = [], []
    for k, (name, kernel) in enumerate(kernels.items()):
        suffix = "ptx" if kernel.object_format == "ptx" else "o"
        entry: dict[str, object] = {
            "name": name, "file": f"k{k}.{suffix}", "entry_name": kernel.entry_name,
            "arg_specs": specs_json(kernel.arg_specs),
            "object_format": kernel.object_format, "target": str(kernel.target)}
        if kernel.launch is not None:
            entry["launch"] = [list(kernel.launch.grid), list(kernel.launch.block)]
        entries.append(entry)
        files.append((entry["file"], kernel.obj))
    kernel_args = {n: len(k.arg_specs) for n, k in kernels.items()}
    blob = pack_blob(graph_json, kernel_args, params, str(target), module)
    manifest = json.dumps({"format": ARCHIVE_FORMAT, "target": str(target), "kernels": entries}).encode()
    with tarfile.open(os.fspath(path), "w") as tar:
        for name, data in [("kernels.json", manifest), ("graph.bin", blob), *files]:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            info.mode = 0o644
            tar.addfile(info, io.BytesIO(data))


def load_graph_archive(path: str | os.PathLike) -> CompiledGraph | Module:
    """Open an archive written by :func:`write_graph_archive` (a kernel module's: its :class:`Module`).

    Raises
    ------
    ArgumentError
        When the file is not such an archive (naming it and what is wrong).
    TargetError
        When its kernels are CPU code for another processor than this machine's.
    """
    where = os.fspath(path)
    try:
        with tarfile.open(where, "r") as tar:
            members = {m.name: m for m in tar.getmembers() if m.isfile()}

            def read(name: str) -> bytes:
                member = members.get(name)
                if member is None:
                    raise ArgumentError(f"load_module: {where!r} is not a graph archive (no {name})")
                if member.size > MAX_MEMBER:
                    raise ArgumentError(f"load_module: {where!r}: {name} is larger than {MAX_MEMBER} bytes")
                f = tar.extractfile(member)
                assert f is not None
                return f.read()

            manifest = json.loads(read("kernels.json"))
            if not isinstance(manifest, dict) or manifest.get("format") != ARCHIVE_FORMAT:
                raise ArgumentError(f"load_module: {where!r}: unknown archive format "
                                    f"{manifest.get('format') if isinstance(manifest, dict) else manifest!r}")
            header, params = unpack_blob(read("graph.bin"), where)
            target = library_target(header, where) or as_target(manifest["target"])
            kernels = {e["name"]: _kernel(e, read(e["file"])) for e in manifest["kernels"]}
    except (tarfile.TarError, OSError, ValueError, KeyError, TypeError) as err:
        raise ArgumentError(f"load_module: {where!r} is not a graph archive written by export_library "
                            f"({type(err).__name__}: {err})") from None
    for kernel in kernels.values():  # a plain `llvm` build names no processor: its objects do
        if kernel.object_format != "ptx":
            _check_object_machine(kernel.obj, kernel.entry_name)
    if header.get("module"):
        entry = header["module"]["entry_name"]
        if entry not in kernels:
            raise ArgumentError(f"load_module: {where!r}: its module's kernel {entry!r} is not in it")
        return Module(kernels[entry])
    return CompiledGraph(header["graph_json"], kernels, params, target)


def _kernel(entry: dict, obj: bytes) -> CompiledKernel:
    launch = entry.get("launch")
    return CompiledKernel(
        obj, str(entry["entry_name"]),
        specs_from_json(entry["arg_specs"]),
        as_target(entry["target"]), object_format=str(entry["object_format"]),
        launch=None if launch is None else LaunchShape(tuple(launch[0]), tuple(launch[1])))
