"""Pre-tuned config packages (TVM's ``autotvm.tophub``): which log files answer for a target.

A package is a directory of tuning logs named per backend, as TVM's tophub names them:
``<backend>_<version>.log`` (``llvm_v0.04.log``, TVM's own packages) or ``<backend>.log``
(e.g. what ``tunecli best logs/*.log -o DIR/llvm.log`` writes).  The backend names of a target
are TVM's: its ``-device`` (``arm_cpu``, ``mali`` ...; aliased as TVM does), then its keys (an
``llvm`` target with an arm or aarch64 ``-mtriple`` has the key ``arm_cpu`` without a ``-device``),
then its kind (``llvm``, ``cuda``).  As in TVM, the first of those that is one of TVM's package backends
(:data:`PACKAGE_VERSION`) decides: an ``arm_cpu`` target is answered by ``arm_cpu`` packages only,
never by the ``llvm`` (x86) ones; a target naming no known backend takes the first name that has
a file.  One file per directory is loaded, and the records of those files are matched to a
query as any log is: by exact target, then model (``-model=rk3399``), then target keys (a
``llvm -mcpu=skylake-avx512`` record answers an ``llvm`` query through the key ``cpu``).

The shipped package holds TVM's ``arm_cpu_v0.08.log`` (its boards: rk3399, pixel2 / snapdragon835,
kirin970, bcm2837 (rasp3b), pynq, ultra96) and tunecli's ``llvm.log`` (see its README).

The directories searched, first first: those given with ``set_locations`` (or the
``TUNECLI_TOPHUB`` environment variable, paths separated by ``os.pathsep``), then the package
shipped with tunecli (``tunecli/engine/log/pretuned/``).  ``TUNECLI_TOPHUB=NONE`` turns the
packages off, as TVM's ``TOPHUB_LOCATION=NONE``.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from pathlib import Path

from tunecli.engine.target import Target, as_target
from tunecli.errors import TuneError

#: TVM's package versions: ``<backend>_<version>.log`` is the file of a backend.
PACKAGE_VERSION = {
    "arm_cpu": "v0.08", "llvm": "v0.04", "cuda": "v0.10", "rocm": "v0.05", "opencl": "v0.04",
    "mali": "v0.06", "intel_graphics": "v0.02", "vta": "v0.10", "amd_apu": "v0.01",
}
#: The package shipped with tunecli.
SHIPPED_DIR = Path(__file__).resolve().parent / "pretuned"
ENV_VAR = "TUNECLI_TOPHUB"
DISABLED = "NONE"

_ALIASES = {"webgpu": "opencl", "vulkan": "opencl", "nvptx": "cuda"}
_locations: list[Path] | None = None


def _alias(name: str) -> str:
    return _ALIASES.get(name, name)


def set_locations(paths: Iterable[str | os.PathLike] | str | None) -> None:
    """Search these package directories before the shipped one (``None``: back to the environment).

    Parameters
    ----------
    paths : iterable of paths, ``"NONE"`` or None
        ``"NONE"`` turns the packages off, the shipped one included.

    Raises
    ------
    TuneError
        Naming a path that is not a directory.
    """
    global _locations
    if paths is None:
        _locations = None
        return
    if isinstance(paths, str):
        paths = [paths]
    found = [Path(p) for p in paths]
    if [str(p) for p in found] == [DISABLED]:
        _locations = []
        return
    for p in found:
        if not p.is_dir():
            raise TuneError(f"pre-tuned package location {p} is not a directory")
    _locations = found + [SHIPPED_DIR]


def locations() -> list[Path]:
    """The package directories searched, first first (empty when the packages are off)."""
    if _locations is not None:
        return list(_locations)
    env = os.environ.get(ENV_VAR, "")
    if env.strip() == DISABLED:
        return []
    return [Path(p) for p in env.split(os.pathsep) if p] + [SHIPPED_DIR]


def backend_names(target: str | Target) -> list[str]:
    """TVM's package names for ``target``: its device, then its keys, then its kind (aliased, once each)."""
    target = as_target(target)
    device = target.attrs.get("device")
    candidates = ([str(device)] if device else []) + target.keys + [target.kind]
    return list(dict.fromkeys(_alias(name) for name in candidates))


def package_files(target: str | Target, dirs: Sequence[Path] | None = None) -> list[Path]:
    """The log files that answer for ``target``: one per package directory that has one.

    Parameters
    ----------
    target : str or Target
    dirs : sequence of Path, optional
        Package directories (default ``locations()``).

    Returns
    -------
    list of Path
    """
    files = []
    names = backend_names(target)
    known = [n for n in names if n in PACKAGE_VERSION]
    if known:
        names = known[:1]
    for directory in locations() if dirs is None else dirs:
        for name in names:
            candidates = [directory / f"{name}.log"]
            if name in PACKAGE_VERSION:
                candidates.insert(0, directory / f"{name}_{PACKAGE_VERSION[name]}.log")
            found = next((c for c in candidates if c.is_file()), None)
            if found is not None:
                files.append(found)
                break
    return files
