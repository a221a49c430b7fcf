"""Compilation targets written as TVM target strings.

A target string is a kind followed by ``-name=value`` options, for example
``llvm``, ``llvm -mcpu=znver4 -mattr=+avx512f,+fma`` or
``llvm -device=arm_cpu -mtriple=aarch64-linux-gnu``.  Targets of other kinds (``cuda``,
``ext_dev``, ...) parse, so that records written for them can be read, but only ``llvm``
compiles here.
"""

from __future__ import annotations

import functools
import platform
import shlex
import threading

from tunecli.errors import TargetError

_DEFAULT_KEYS = {
    "llvm": ["cpu"],
    "c": ["cpu"],
    "cuda": ["cuda", "gpu"],
    "nvptx": ["cuda", "gpu"],
    "opencl": ["opencl", "gpu"],
    "rocm": ["rocm", "gpu"],
    "vulkan": ["vulkan", "gpu"],
    "metal": ["metal", "gpu"],
}
_LIST_OPTIONS = ("mattr", "keys", "libs")
_local = threading.local()


@functools.cache
def host_triple() -> str:
    """Return LLVM's triple for the machine this process runs on."""
    import llvmlite.binding as llvm

    return llvm.get_process_triple()


@functools.cache
def host_cpu() -> str:
    """Return LLVM's name for this machine's CPU (e.g. ``znver4``)."""
    import llvmlite.binding as llvm

    return llvm.get_host_cpu_name()


@functools.cache
def host_features() -> str:
    """Return this machine's CPU features as an LLVM feature string (``+avx512f,...``)."""
    import llvmlite.binding as llvm

    return llvm.get_host_cpu_features().flatten()


def _arch(triple: str) -> str:
    arch = triple.split("-", 1)[0]
    return {"amd64": "x86_64", "arm64": "aarch64"}.get(arch, arch)


class TargetKind(str):
    """The kind of a target (``llvm``, ``cuda``, ...): a string that also has TVM's ``.name``."""

    @property
    def name(self) -> str:
        return str(self)


class Target:
    """A parsed target string.

    Parameters
    ----------
    target : str or Target
        A TVM-style target string such as ``"llvm -mcpu=znver4"``.
    host : str or Target, optional
        The host target of a device target (TVM's ``Target(target, host=...)``).

    Attributes
    ----------
    kind : str
        The target kind (``llvm``, ``cuda``, ...).
    keys : list of str
        Keys used to look up tuned configs (``["cpu"]`` for llvm).
    model : str
        The ``-model=`` option, or ``"unknown"``.
    attrs : dict
        Every ``-name=value`` option as written (lists for mattr, keys, libs).
    """

    def __init__(self, target: str | Target, host: str | Target | None = None):
        self.host = None if host is None else Target(host)
        if isinstance(target, Target):
            self.host = self.host or target.host
            target = str(target)
        if not isinstance(target, str) or not target.strip():
            raise TargetError(f"a target must be a non-empty string, got {target!r}")
        try:
            words = shlex.split(target)
        except ValueError as err:
            raise TargetError(f"cannot parse target string {target!r}: {err}") from None
        self._text = " ".join(words)
        self.kind = TargetKind(words[0])
        if self.kind.startswith("-"):
            raise TargetError(f"target string {target!r} must start with a kind such as 'llvm'")
        self.attrs: dict[str, object] = {}
        for word in words[1:]:
            if not word.startswith("-") or "=" not in word:
                raise TargetError(f"target option {word!r} in {target!r} is not of the form -name=value")
            name, value = word[1:].split("=", 1)
            if name == "target":  # legacy spelling of -mtriple
                name = "mtriple"
            self.attrs[name] = value.split(",") if name in _LIST_OPTIONS else value
        self.keys = self._derive_keys()

    def _derive_keys(self) -> list[str]:
        if "keys" in self.attrs:
            return list(self.attrs["keys"])
        keys = list(_DEFAULT_KEYS.get(self.kind, []))
        triple = self.mtriple or ""
        is_arm = _arch(triple) in ("aarch64", "arm", "armv7l", "armv7")
        if self.kind == "llvm" and is_arm and "arm_cpu" not in keys:
            keys = ["arm_cpu"] + keys
        device = self.attrs.get("device")
        if device and device not in keys:
            keys = [device] + keys
        return keys

    @property
    def model(self) -> str:
        return str(self.attrs.get("model", "unknown"))

    @property
    def mcpu(self) -> str | None:
        value = self.attrs.get("mcpu")
        return None if value is None else str(value)

    @property
    def mattr(self) -> list[str]:
        return list(self.attrs.get("mattr", []))

    @property
    def mtriple(self) -> str | None:
        value = self.attrs.get("mtriple")
        return None if value is None else str(value)

    @property
    def llvm_triple(self) -> str:
        """The LLVM triple to compile for: ``-mtriple`` or the host's."""
        return self.mtriple or host_triple()

    @property
    def llvm_cpu(self) -> str:
        """The LLVM CPU name to compile for: ``-mcpu``, the host CPU, or ``generic`` for cross targets."""
        if self.mcpu:
            return self.mcpu
        return host_cpu() if self.is_host else "generic"

    @property
    def llvm_features(self) -> str:
        """The LLVM feature string: ``-mattr``, or the host's features when compiling for the host CPU."""
        if self.mattr:
            return ",".join(self.mattr)
        return host_features() if self.is_host and not self.mcpu else ""

    @property
    def is_host(self) -> bool:
        """True when code for this target can run in this process."""
        return self.kind == "llvm" and _arch(self.llvm_triple) == _arch(host_triple())

    @property
    def vector_bits(self) -> int:
        """Widest SIMD register in bits, used to choose vector widths."""
        arch = _arch(self.llvm_triple)
        if arch == "x86_64":
            feats = self.llvm_features
            cpu = self.llvm_cpu
            if "+avx512f" in feats or cpu.startswith(("znver4", "znver5", "skylake-avx512", "icelake",
                                                       "sapphirerapids", "cascadelake", "cooperlake",
                                                       "tigerlake", "rocketlake", "x86-64-v4")):
                return 512
            if "+avx" in feats or "+avx2" in feats:
                return 256
            return 128
        return 128

    def __str__(self) -> str:
        # The string as written (whitespace normalised): records keep the user's spelling, so a
        # log read and written back is byte-identical and TVM parses what we write.
        return self._text

    def __repr__(self) -> str:
        return f"Target({self._text!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Target) and str(self) == str(other)

    def __hash__(self) -> int:
        return hash(str(self))

    def __enter__(self) -> Target:
        stack = getattr(_local, "stack", None)
        if stack is None:
            stack = _local.stack = []
        stack.append(self)
        return self

    def __exit__(self, *exc) -> None:
        _local.stack.pop()

    @staticmethod
    def current(allow_none: bool = True) -> Target | None:
        """Return the innermost target of a ``with target:`` block, or None."""
        stack = getattr(_local, "stack", None)
        if stack:
            return stack[-1]
        if not allow_none:
            raise TargetError("no target is active: use `with Target(...)` or pass target=")
        return None


def as_target(target: str | Target | None) -> Target:
    """Return ``target`` as a Target; None means the current target, else the host (``llvm``)."""
    if target is None:
        return Target.current() or Target("llvm")
    return target if isinstance(target, Target) else Target(target)


def host_arch() -> str:
    """Return the host's architecture name (``x86_64``, ``aarch64``)."""
    return _arch(platform.machine().lower())
