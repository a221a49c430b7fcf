"""``export_library``: a built network written for a device to run (TVM's ``export_library``).

:func:`tunecli.engine.runtime.kernel_export.export_kernels` writes it: a path ending in ``.tar``
gets the archive of :mod:`tunecli.engine.runtime.graph_archive` (objects, graph, parameters) that a
device server loads itself, for any target (``cuda`` included); any other path one shared library
linked by a compile function (:func:`tunecli.engine.runtime.linker.link_library`): the one given
(``fcompile``/``cc``: a driver name or TVM's compile function, e.g.
``cross_compiler("aarch64-linux-gnu-gcc")``, ``ndk.create_shared``), else a driver found for the
target (the host's, or ``<triple>-gcc``), embedding graph and parameters as one data blob
(:mod:`tunecli.engine.runtime.graph_library`).
"""

from __future__ import annotations

import os

from tunecli.engine.runtime.graph_library import CompiledGraph
from tunecli.engine.runtime.kernel_export import export_kernels
from tunecli.engine.runtime.linker import CompileFunc


def export_graph(lib: CompiledGraph, path: str | os.PathLike, fcompile: str | CompileFunc | None = None,
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
    export_kernels(path, lib.graph_json, lib.kernels, lib.params, lib.target, fcompile, options)
