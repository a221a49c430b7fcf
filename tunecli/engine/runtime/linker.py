"""C compiler drivers that link compiled kernels into a shared library (TVM's ``contrib.cc`` and
``contrib.ndk``), and :func:`link_library`, which links kernels' objects and one data blob (what
``export_library`` of a network or of a kernel module writes).

A *compile function* is TVM's: ``fcompile(output, objects, options=None)`` links ``objects``
(object files, assembly) into the shared library ``output``, passing ``options`` (libraries) after
them; its optional ``output_format`` attribute says the file suffix it writes.
:func:`create_shared` runs a given driver (default: ``cc``, else ``gcc``); :func:`cross_compiler`
makes a compile function of a cross driver (``"aarch64-linux-gnu-gcc"``); :func:`ndk_create_shared`
uses the driver named by ``TVM_NDK_CC`` (Android's NDK clang, or any cross driver);
:func:`compiler_for` finds a driver for a target: the host's for this machine, else
``<triple>-gcc`` on the PATH.  The blob lies at the symbols ``tunecli_graph_blob`` /
``tunecli_graph_blob_size``; the loader finds it there (:mod:`.graph_library`).  A kernel object
saved by ``Module.save("k.o")`` has its blob beside it (``k.o.tunecli_blob``), which
:func:`create_shared` links in.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Sequence

from tunecli.engine.target import Target
from tunecli.errors import GraphError

#: Symbols of the data blob of an exported library and of its size (a u64).
BLOB_SYMBOL = "tunecli_graph_blob"
BLOB_SIZE_SYMBOL = "tunecli_graph_blob_size"

#: Suffix of the file ``Module.save("k.o")`` writes beside the object (``k.o.tunecli_blob``): the blob
#: that :func:`create_shared` links in when it links that one object, so ``load_module`` of the
#: library knows the kernel's arguments (TVM's tutorials: ``save``, ``cc.create_shared``, ``load_module``).
OBJECT_BLOB_SUFFIX = ".tunecli_blob"

#: The environment variable naming the NDK's compiler driver (TVM's).
NDK_CC_ENV = "TVM_NDK_CC"

#: A compile function: ``f(output, objects, options)`` links ``objects`` into ``output``.
CompileFunc = Callable[..., None]


def create_shared(output: str | os.PathLike, objects: Sequence[str] | str,
                  options: Sequence[str] | None = None, cc: str | None = None, cwd: str | None = None,
                  **kwargs: object) -> None:
    """Link ``objects`` into the shared library ``output`` with the driver ``cc`` (TVM's
    ``contrib.cc.create_shared``).

    Raises
    ------
    GraphError
        When no driver is found or linking fails (with the driver's message).
    """
    driver = cc or shutil.which("cc") or shutil.which("gcc")
    if driver is None:
        raise GraphError("create_shared: no C compiler (cc or gcc) on PATH to link the library")
    objs = [objects] if isinstance(objects, str) else [os.fspath(o) for o in objects]
    with tempfile.TemporaryDirectory(prefix="tunecli_link_") as tmp:
        blob = _saved_blob(objs, cwd, tmp)
        cmd = [driver, "-shared", "-fPIC", "-o", os.fspath(output), *objs, *blob, *(options or [])]
        try:
            done = subprocess.run(cmd, capture_output=True, text=True, check=False, cwd=cwd)
        except OSError as err:
            raise GraphError(f"create_shared: cannot run the compiler {driver!r}: {err}") from None
    if done.returncode != 0:
        raise GraphError(f"create_shared: linking {os.fspath(output)!r} with {driver!r} failed: "
                         f"{done.stderr.strip()}")


create_shared.output_format = "so"  # type: ignore[attr-defined]


def _saved_blob(objects: Sequence[str], cwd: str | None, tmp: str) -> list[str]:
    """The assembly of the blob saved beside the one object among ``objects`` that has one
    (:data:`OBJECT_BLOB_SUFFIX`), written in ``tmp``; none when no object or several have one."""
    found = [path for obj in objects
             if os.path.isfile(path := os.path.join(cwd or "", obj) + OBJECT_BLOB_SUFFIX)]
    if len(found) != 1:
        return []
    asm = os.path.join(tmp, "blob.S")
    with open(asm, "w") as f:
        f.write(_blob_assembly(os.path.abspath(found[0]), os.path.getsize(found[0])))
    return [asm]


def cross_compiler(compile_func: str | CompileFunc, options: Sequence[str] | None = None,
                   output_format: str | None = None, get_target_triple: Callable[[], str] | None = None,
                   add_files: Sequence[str] | None = None) -> CompileFunc:
    """A compile function linking with ``compile_func`` (a driver name such as
    ``"aarch64-linux-gnu-gcc"``, or another compile function) and extra ``options``/``add_files``
    (TVM's ``contrib.cc.cross_compiler``)."""
    base_options = list(options or [])
    extra_files = list(add_files or [])

    def _fcompile(outputs: str | os.PathLike, objects: Sequence[str], options: Sequence[str] | None = None,
                  **kwargs: object) -> None:
        all_options = [*base_options, *(options or [])]
        all_objects = [*([objects] if isinstance(objects, str) else objects), *extra_files]
        if isinstance(compile_func, str):
            create_shared(outputs, all_objects, all_options, cc=compile_func)
        else:
            compile_func(outputs, all_objects, all_options)

    _fcompile.output_format = output_format or getattr(compile_func, "output_format", "so")  # type: ignore[attr-defined]
    _fcompile.driver = compile_func if isinstance(compile_func, str) else None  # type: ignore[attr-defined]
    if get_target_triple is not None:
        _fcompile.get_target_triple = get_target_triple  # type: ignore[attr-defined]
    return _fcompile


def ndk_create_shared(output: str | os.PathLike, objects: Sequence[str], options: Sequence[str] | None = None,
                      **kwargs: object) -> None:
    """Link with the driver ``$TVM_NDK_CC`` names (TVM's ``contrib.ndk.create_shared``).

    Raises
    ------
    GraphError
        When ``TVM_NDK_CC`` is not set, or linking fails.
    """
    driver = os.environ.get(NDK_CC_ENV)
    if not driver:
        raise GraphError(f"ndk.create_shared: set {NDK_CC_ENV} to the NDK's compiler driver "
                         "(e.g. .../toolchains/llvm/prebuilt/linux-x86_64/bin/aarch64-linux-android28-clang)")
    create_shared(output, objects, options, cc=driver)


ndk_create_shared.output_format = "so"  # type: ignore[attr-defined]


def compiler_for(target: Target) -> str | None:
    """A driver on the PATH that links for ``target``: the host's ``cc``/``gcc`` for this machine's
    code, else ``<triple>-gcc`` (``aarch64-linux-gnu-gcc``; ``-unknown`` dropped from the triple)."""
    if target.is_host:
        return shutil.which("cc") or shutil.which("gcc")
    triple = target.llvm_triple
    for name in (triple, triple.replace("-unknown-", "-"), triple.replace("-unknown", "")):
        found = shutil.which(f"{name}-gcc")
        if found:
            return found
    return None


def link_library(output: str | os.PathLike, objects: Sequence[bytes], blob: bytes, target: Target,
                 fcompile: str | CompileFunc | None = None, options: Sequence[str] | None = None) -> None:
    """Link ``objects`` (relocatable objects for ``target``) and ``blob`` into the shared library
    ``output`` with ``fcompile`` (a driver name or a compile function; default: :func:`compiler_for`
    the target).

    Raises
    ------
    GraphError
        When no driver links for the target, ``fcompile`` is neither, or linking fails.
    """
    link = _compile_function(fcompile, target)
    with tempfile.TemporaryDirectory(prefix="tunecli_export_") as tmp:
        files = []
        for k, obj in enumerate(objects):
            files.append(os.path.join(tmp, f"k{k}.o"))
            with open(files[-1], "wb") as f:
                f.write(obj)
        data = os.path.join(tmp, "blob.bin")
        with open(data, "wb") as f:
            f.write(blob)
        asm = os.path.join(tmp, "blob.S")
        with open(asm, "w") as f:
            f.write(_blob_assembly(data, len(blob)))
        link(os.fspath(output), [*files, asm], ["-lm", *(options or [])])  # parallel loops: the loader's pool


def _compile_function(fcompile: str | CompileFunc | None, target: Target) -> CompileFunc:
    if callable(fcompile):
        return fcompile
    if isinstance(fcompile, str):
        return cross_compiler(fcompile)
    if fcompile is not None:
        raise GraphError(f"export_library: fcompile/cc must be a compiler driver name or a compile function, "
                         f"got {type(fcompile).__name__}")
    driver = compiler_for(target)
    if driver is None:
        triple = target.llvm_triple
        raise GraphError(
            f"export_library: the kernels are for {str(target)!r} ({triple}) and no C compiler on the "
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
