"""An on-disk cache of compiled kernels, shared by the builds of one user.

Entries are opaque bytes stored under a key (:func:`cache_key`): a digest of what the caller says
determines the code (for a network's group: its text, the config, the kernel name), of the
target as LLVM compiles for it (triple, CPU, features) and of :class:`CodeVersions` (tunecli's
version and a digest of its compiler's sources, llvmlite's and LLVM's versions), so a change of
any of them misses.

The directory is ``$TUNECLI_CACHE_DIR``, else ``$XDG_CACHE_HOME/tunecli/kernels``, else
``~/.cache/tunecli/kernels``; ``TUNECLI_NO_CACHE=1`` turns the cache off and
``TUNECLI_CACHE_SIZE`` bounds it (bytes, or with a ``K``/``M``/``G`` suffix; default 1 GiB).
Writers write a temporary file and rename it over the entry, so concurrent builds never see a
partial entry; each entry starts with a checksum of its payload, and an entry that does not
match it is reported (a warning), removed and treated as a miss.  A hit refreshes the entry's
modification time; :meth:`KernelCache.trim` removes the least recently used entries until the
cache fits its bound.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import logging
import os
import sys
import time
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path

import llvmlite
import llvmlite.binding as llvm

from tunecli.engine.atomic_file import write_bytes
from tunecli.engine.target import Target
from tunecli.errors import ArgumentError

logger = logging.getLogger("tunecli.kernel_cache")

DIR_ENV = "TUNECLI_CACHE_DIR"
OFF_ENV = "TUNECLI_NO_CACHE"
SIZE_ENV = "TUNECLI_CACHE_SIZE"
DEFAULT_MAX_BYTES = 1 << 30
#: Age in seconds after which a temporary file is a dead writer's.
STALE_SECONDS = 3600.0
#: Changes whenever the layout of an entry's payload changes.
FORMAT = "1"
_MAGIC = b"TUNECLI-KERNEL\n"
_SUFFIX = ".kernel"
_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
#: The parts of tunecli (relative to the package) whose code decides a network's kernels: the
#: compiler, the templates and their config spaces, the graph compiler.  Not the measurement,
#: logs, tuners, jobs or commands (a config from a log is part of a key itself), nor the graph
#: frontends and model definitions (a key holds the group's text, whatever made the graph).
COMPILER_SOURCES = ("errors.py", "engine/ir", "engine/target.py", "engine/option.py", "engine/transform",
                    "engine/te", "engine/schedule", "engine/lower", "engine/codegen", "engine/build.py",
                    "engine/task", "engine/ops", "engine/graph")
NOT_COMPILER_SOURCES = ("engine/graph/frontend", "engine/graph/models")
PACKAGE = Path(__file__).resolve().parents[2]
_UNWRITABLE: set[Path] = set()


@dataclass(frozen=True)
class CodeVersions:
    """What, besides a kernel's inputs, decides the code compiled from them.

    Attributes
    ----------
    tunecli : str
        The installed version of tunecli.
    sources : str
        Digest of the sources of tunecli's compiler (:data:`COMPILER_SOURCES` less
        :data:`NOT_COMPILER_SOURCES`; a development tree changes without a new version).
    llvmlite : str
    llvm : str
        The LLVM version llvmlite was built with.
    python : str
        ``major.minor`` (entries are pickled by the callers).
    """

    tunecli: str
    sources: str
    llvmlite: str
    llvm: str
    python: str


@functools.cache
def code_versions() -> CodeVersions:
    """The :class:`CodeVersions` of this process (computed once)."""
    try:
        from importlib.metadata import PackageNotFoundError, version

        tunecli_version = version("tunecli")
    except PackageNotFoundError:
        tunecli_version = "unknown"
    root = PACKAGE
    digest = hashlib.sha256()
    for path in compiler_sources(root):
        digest.update(str(path.relative_to(root)).encode())
        digest.update(path.read_bytes())
    python = f"{sys.version_info[0]}.{sys.version_info[1]}"
    return CodeVersions(tunecli_version, digest.hexdigest(), llvmlite.__version__,
                        ".".join(str(v) for v in llvm.llvm_version_info), python)


def compiler_sources(root: Path = PACKAGE) -> list[Path]:
    """The Python files of the tunecli package at ``root`` that :class:`CodeVersions` digests."""
    skipped = tuple(root / part for part in NOT_COMPILER_SOURCES)
    files = {p for part in COMPILER_SOURCES
             for p in ([root / part] if (root / part).is_file() else (root / part).rglob("*.py"))}
    return sorted(p for p in files if not any(p.is_relative_to(s) for s in skipped))


def target_text(target: Target) -> str:
    """The target as the code depends on it: its string and the triple, CPU and features LLVM
    compiles for (a host target's resolved to this machine's)."""
    return f"{target}|{target.llvm_triple}|{target.llvm_cpu}|{target.llvm_features}"


def cache_key(parts: Mapping[str, str], target: Target, versions: CodeVersions | None = None) -> str:
    """The key of the kernel that ``parts`` (what the caller's code depends on) compile to for
    ``target`` with ``versions`` (default: :func:`code_versions`); a hex digest."""
    versions = versions if versions is not None else code_versions()
    digest = hashlib.sha256(f"format {FORMAT}\n".encode())
    items = {**{f"version.{k}": v for k, v in asdict(versions).items()}, "target": target_text(target),
             **{f"part.{k}": v for k, v in parts.items()}}
    for name in sorted(items):
        value = items[name].encode()
        digest.update(f"{name} {len(value)}\n".encode())
        digest.update(value)
    return digest.hexdigest()


def parse_size(text: str) -> int:
    """Bytes of ``"1073741824"``, ``"512M"``, ``"1G"`` (ArgumentError naming the variable)."""
    s = text.strip().upper().removesuffix("IB").removesuffix("B")
    unit = s[-1:] if s[-1:] in _UNITS and s[-1:] else ""
    try:
        value = float(s[: len(s) - len(unit)]) * _UNITS[unit]
    except ValueError:
        raise ArgumentError(f"{SIZE_ENV}={text!r}: expected a size such as 1073741824, 512M or 1G") from None
    if value < 0:
        raise ArgumentError(f"{SIZE_ENV}={text!r}: a size cannot be negative")
    return int(value)


def default_dir() -> Path:
    """``$TUNECLI_CACHE_DIR``, else ``$XDG_CACHE_HOME/tunecli/kernels``, else ``~/.cache/tunecli/kernels``."""
    if os.environ.get(DIR_ENV):
        return Path(os.environ[DIR_ENV]).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "tunecli" / "kernels"


def cache_disabled() -> bool:
    """True when ``TUNECLI_NO_CACHE`` is set to anything but ``""``/``0``/``false``/``no``."""
    return os.environ.get(OFF_ENV, "").strip().lower() not in ("", "0", "false", "no")


@contextlib.contextmanager
def bypassed(on: bool = True) -> Iterator[None]:
    """Inside, builds (and the processes they start) neither read nor write the cache (``on``)."""
    if not on:
        yield
        return
    old = os.environ.get(OFF_ENV)
    os.environ[OFF_ENV] = "1"
    try:
        yield
    finally:
        if old is None:
            os.environ.pop(OFF_ENV, None)
        else:
            os.environ[OFF_ENV] = old


def default_cache() -> KernelCache | None:
    """The cache the environment describes (see the module docstring); None when it is turned off."""
    if cache_disabled():
        return None
    size = os.environ.get(SIZE_ENV)
    return KernelCache(default_dir(), parse_size(size) if size else DEFAULT_MAX_BYTES)


class KernelCache:
    """Entries under ``root`` (``<key[:2]>/<key>.kernel``), at most about ``max_bytes`` after :meth:`trim`."""

    def __init__(self, root: str | os.PathLike, max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        self.root = Path(root)
        self.max_bytes = int(max_bytes)

    def path(self, key: str) -> Path:
        """Where the entry of ``key`` lives."""
        return self.root / key[:2] / f"{key}{_SUFFIX}"

    def get(self, key: str) -> bytes | None:
        """The payload stored under ``key``, or None (absent, unreadable or corrupted: a corrupted
        entry is reported and removed)."""
        path = self.path(key)
        try:
            data = path.read_bytes()
        except OSError:
            return None
        head = len(_MAGIC) + 32
        payload = data[head:]
        if not data.startswith(_MAGIC) or hashlib.sha256(payload).digest() != data[len(_MAGIC):head]:
            logger.warning("kernel cache: entry %s is corrupted (checksum mismatch); it is removed and "
                           "the kernel compiled again", path)
            self._remove(path)
            return None
        try:
            os.utime(path)
        except OSError:
            pass
        return payload

    def put(self, key: str, payload: bytes) -> None:
        """Store ``payload`` under ``key`` (atomically; an unwritable cache only logs why)."""
        path = self.path(key)
        try:
            write_bytes(path, _MAGIC + hashlib.sha256(payload).digest() + payload)
        except OSError as err:
            if self.root not in _UNWRITABLE:  # once per directory and process
                _UNWRITABLE.add(self.root)
                logger.warning("kernel cache: cannot write %s (%s); kernels are compiled without it",
                               path, err)

    def entries(self) -> list[tuple[Path, int, float]]:
        """``(path, bytes, last use)`` of every entry."""
        found = []
        for path in self._files():
            try:
                st = path.stat()
            except OSError:
                continue
            found.append((path, st.st_size, st.st_mtime))
        return found

    def size(self) -> int:
        """Bytes held by the entries."""
        return sum(size for _, size, _ in self.entries())

    def trim(self) -> int:
        """Remove the least recently used entries until the rest fit ``max_bytes``; return how many
        were removed.  Temporary files older than :data:`STALE_SECONDS` (a writer that was killed)
        are removed too."""
        if self.root.is_dir():
            now = time.time()
            for tmp in self.root.glob("*/.*.tmp"):
                with contextlib.suppress(OSError):
                    if now - tmp.stat().st_mtime > STALE_SECONDS:
                        tmp.unlink()
        entries = sorted(self.entries(), key=lambda e: (e[2], str(e[0])))  # equal times: by path
        total = sum(size for _, size, _ in entries)
        removed = 0
        for path, size, _ in entries:
            if total <= self.max_bytes:
                break
            self._remove(path)
            total -= size
            removed += 1
        return removed

    def clear(self) -> None:
        """Remove every entry."""
        for path in self._files():
            self._remove(path)

    def _files(self) -> Iterable[Path]:
        if not self.root.is_dir():
            return []
        return self.root.glob(f"*/*{_SUFFIX}")

    @staticmethod
    def _remove(path: Path) -> None:
        try:
            path.unlink()
        except OSError:
            pass
