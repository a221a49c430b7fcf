"""``export_library``: a built network written for a device to run (TVM's ``export_library``).

A path ending in ``.tar`` gets the archive of :mod:`tunecli.engine.runtime.graph_archive`
(objects, graph, parameters) that a device server loads itself, for any target (``cuda``
included).  Any other path gets one shared library linked by a compile function
(:mod:`.linker`): the one given (``fcompile``/``cc``: a driver name or TVM's compile function,
e.g. ``cross_compiler("aarch64-linux-gnu-gcc")``, ``ndk.create_shared``), else a driver found for
the target (the host's, or ``<triple>-gcc``).  The library embeds graph and parameters as one
data blob (:mod:`tunecli.engine.runtime.graph_library`).
"""

from __future__ import annotations

import os
import tempfile
from typing import Any

from tunecli.engine.runtime.graph_archive import write_graph_archive
from tunecli.engine.runtime.graph_library import BLOB_SIZE_SYMBOL, BLOB_SYMBOL, CompiledGraph, pack_blob
from tunecli.errors import GraphError

from .linker import compiler_for, create_shared, cross_compiler


def export_graph(lib: CompiledGraph, path: str | os.PathLike, fcompile: Any = None,
                 options: list[str] | None = None) -> None:
    """Write ``lib`` to ``path`` (see the module docstring).

    Parameters
    ----------
    lib : CompiledGraph
    path : str or PathLike
        ``*.tar``: an archive; anything else: a shared library.
    fcompile : str or callable, optional
        The C compiler driver, or a compile function ``fcompile(output, objects, options)``.
    options : list of str, optional
        Extra link options (after the objects).

    Raises
    ------
    GraphError
        When no driver links for the target, the build holds GPU code (shared libraries hold host
        code only), or linking fails.
    """
    out = os.fspath(path)
    target = lib.target
    if out.endswith(".tar"):
        write_graph_archive(out, lib.graph_json, lib.kernels, lib.params, target)
        return
    if target.is_gpu:
        raise GraphError(
            f"export_library: the kernels are PTX for {str(target)!r}; a shared library holds host "
            "objects only: export a '.tar' archive (a GPU device server loads it) or run the build in "
            "this process with lib['default'](tunecli.cuda(0))"
        )
    link = _compile_function(fcompile, lib)
    blob = pack_blob(lib.graph_json, {n: len(k.arg_specs) for n, k in lib.kernels.items()}, lib.params,
                     str(target))
    with tempfile.TemporaryDirectory(prefix="tunecli_export_") as tmp:
        objects = []
        for k, kernel in enumerate(lib.kernels.values()):
            obj = os.path.join(tmp, f"k{k}.o")
            with open(obj, "wb") as f:
                f.write(kernel.obj)
            objects.append(obj)
        data = os.path.join(tmp, "graph.bin")
        with open(data, "wb") as f:
            f.write(blob)
        asm = os.path.join(tmp, "graph.S")
        with open(asm, "w") as f:
            f.write(_blob_assembly(data, len(blob)))
        link(out, [*objects, asm], ["-lm", *(options or [])])  # parallel loops: the loader's thread pool


def _compile_function(fcompile: Any, lib: CompiledGraph) -> Any:
    if callable(fcompile):
        return fcompile
    if isinstance(fcompile, str):
        return cross_compiler(fcompile)
    if fcompile is not None:
        raise GraphError(f"export_library: fcompile/cc must be a compiler driver name or a compile function, "
                         f"got {type(fcompile).__name__}")
    driver = compiler_for(lib.target)
    if driver is None:
        triple = lib.target.llvm_triple
        raise GraphError(
            f"export_library: the kernels are for {str(lib.target)!r} ({triple}) and no C compiler on the "
            f"PATH links for it: give one (export_library(path, cc.cross_compiler('{triple}-gcc')); Debian: "
            "apt-get install gcc-aarch64-linux-gnu), or export a '.tar' archive that the device loads itself"
        )
    return lambda output, objects, options: create_shared(output, objects, options, cc=driver)


def _blob_assembly(data_path: str, size: int) -> str:
    return (
        f".section .rodata\n.balign 64\n.globl {BLOB_SYMBOL}\n.type {BLOB_SYMBOL}, %object\n"
        f'{BLOB_SYMBOL}:\n.incbin "{data_path}"\n.balign 8\n.globl {BLOB_SIZE_SYMBOL}\n'
        f".type {BLOB_SIZE_SYMBOL}, %object\n{BLOB_SIZE_SYMBOL}:\n.quad {size}\n"
        '.section .note.GNU-stack,"",%progbits\n'
    )
