"""``export_library`` of compiled kernels: a network's or one kernel module's, written for a device to
load (TVM's ``export_library``).

A path ending in ``.tar`` gets an archive (:mod:`.graph_archive`: objects, graph blob) that a device
server loads itself, for any target (``cuda`` included).  Any other path gets one shared library
linked by :func:`.linker.link_library` with the blob of :func:`.graph_library.pack_blob`; it holds
host objects only.  Both load back with ``runtime.load_module(path)`` (locally, or on a device
server after ``remote.upload``): a network's as a graph library, a kernel module's as a
:class:`~.module.Module`.  ``save_object`` writes a kernel's object with its blob beside it, which
``cc.create_shared`` links in (:mod:`.linker`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence

from numpy.typing import ArrayLike

from tunecli.engine.codegen import CompiledKernel
from tunecli.engine.target import Target
from tunecli.errors import GraphError

from .graph_archive import write_graph_archive
from .graph_library import pack_blob
from .linker import OBJECT_BLOB_SUFFIX, CompileFunc, link_library
from .module import Module


def export_kernels(path: str | os.PathLike, graph_json: str, kernels: Mapping[str, CompiledKernel],
                   params: Mapping[str, ArrayLike], target: Target, fcompile: str | CompileFunc | None = None,
                   options: Sequence[str] | None = None, module: CompiledKernel | None = None) -> None:
    """Write kernels, graph and parameters to ``path`` (see the module docstring); ``module``: the
    one kernel of a kernel module's library (then ``graph_json`` is empty and ``params`` too).

    Raises
    ------
    GraphError
        When a shared library is asked of GPU code, no driver links for the target, or linking fails.
    """
    out = os.fspath(path)
    if out.endswith(".tar"):
        write_graph_archive(out, graph_json, kernels, params, target, module)
        return
    if target.is_gpu:
        raise GraphError(
            f"export_library: the kernels are PTX for {str(target)!r}; a shared library holds host "
            "objects only: export a '.tar' archive (a GPU device server loads it), or run it in this "
            "process on tunecli.cuda(0)"
        )
    kernel_args = {n: len(k.arg_specs) for n, k in kernels.items()}
    blob = pack_blob(graph_json, kernel_args, params, str(target), module)
    link_library(out, [k.obj for k in kernels.values()], blob, target, fcompile, options)


def save_object(module: Module, path: str | os.PathLike) -> None:
    """Write the module's object to ``path`` and its blob beside it (``linker.OBJECT_BLOB_SUFFIX``),
    so a shared library linked from the object by ``cc.create_shared`` loads as the module."""
    kernel, obj = module.kernel, module.object_bytes()
    out = os.fspath(path)
    with open(out, "wb") as f:
        f.write(obj)
    kernel_args = {kernel.entry_name: len(kernel.arg_specs)}
    with open(out + OBJECT_BLOB_SUFFIX, "wb") as f:
        f.write(pack_blob("", kernel_args, {}, str(kernel.target), kernel))


def export_module(module: Module, path: str | os.PathLike, fcompile: str | CompileFunc | None = None,
                  options: Sequence[str] | None = None) -> None:
    """Write a kernel module (what ``build`` returned) to ``path`` (``lib.so`` or ``lib.tar``).

    Raises
    ------
    GraphError
        As :func:`export_kernels`, and for a module loaded from a shared library (it has no object).
    """
    kernel = module.kernel
    if not kernel.obj:
        raise GraphError(f"export_library: module {kernel.entry_name!r} was loaded from a shared library "
                         "and has no object to export; export the module that build() returned")
    export_kernels(path, "", {kernel.entry_name: kernel}, {}, kernel.target, fcompile, options, kernel)
