"""Compilation targets written as TVM target strings.

A target string is a kind followed by ``-name=value`` options, for example
``llvm``, ``llvm -mcpu=znver4 -mattr=+avx512f,+fma`` or
``llvm -device=arm_cpu -mtriple=aarch64-linux-gnu``.  Targets of other kinds (``cuda``,
``ext_dev``, ...) parse, so that records written for them can be read, but only ``llvm``
compiles here.

A ``Target`` is immutable and picklable: a job parses its target string once and the object
travels whole (job spec → task → measure input → build worker).  ``str(target)`` is the string
as written (whitespace normalised), which is what logs store.  Two targets are equal when they
have the same kind, options and host, whatever the order the options were written in.
"""

from __future__ import annotations

import functools
import platform
import shlex
import threading
from collections.abc import Iterable

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


def triple_arch(triple: str) -> str:
    """The architecture part of an LLVM triple, normalised (``arm64-apple-darwin`` → ``aarch64``)."""
    arch = triple.split("-", 1)[0]
    return {"amd64": "x86_64", "arm64": "aarch64"}.get(arch, arch)


_X86_V2 = ("sse3", "ssse3", "sse4.1", "sse4.2", "popcnt", "cx16", "sahf")
_X86_V3 = (*_X86_V2, "avx", "avx2", "bmi", "bmi2", "f16c", "fma", "lzcnt", "movbe")
_X86_V4 = (*_X86_V3, "avx512f", "avx512bw", "avx512cd", "avx512dq", "avx512vl")

#: The instruction-set features x86 CPU names (``-mcpu``) require of the machine that runs their
#: code: the x86-64 psABI levels (v2: SSE4.2, v3: AVX2/FMA, v4: AVX-512) each CPU name implies.
X86_CPU_FEATURES: dict[str, tuple[str, ...]] = {
    **dict.fromkeys(("generic", "x86-64"), ()),
    **dict.fromkeys(("x86-64-v2", "nehalem", "westmere", "silvermont", "goldmont", "goldmont-plus",
                     "tremont", "btver2", "bdver1"), _X86_V2),
    **dict.fromkeys(("sandybridge", "ivybridge"), (*_X86_V2, "avx")),
    **dict.fromkeys(("x86-64-v3", "haswell", "broadwell", "skylake", "alderlake", "raptorlake",
                     "meteorlake", "gracemont", "znver1", "znver2", "znver3"), _X86_V3),
    **dict.fromkeys(("x86-64-v4", "skylake-avx512", "cascadelake", "cooperlake", "cannonlake",
                     "icelake-client", "icelake-server", "tigerlake", "rocketlake", "sapphirerapids",
                     "emeraldrapids", "graniterapids", "znver4", "znver5"), _X86_V4),
}


def required_features(mcpu: str | None, mattr: list[str] | tuple[str, ...]) -> frozenset[str] | None:
    """The CPU features code for ``-mcpu``/``-mattr`` needs of the machine that runs it.

    Parameters
    ----------
    mcpu : str or None
    mattr : list of str
        ``+feature`` (needed) and ``-feature`` (not used) entries.

    Returns
    -------
    frozenset of str or None
        Feature names without ``+``; None when ``mcpu`` is a CPU name not in
        :data:`X86_CPU_FEATURES` (its features are unknown here).
    """
    needed = {f[1:] for f in mattr if f.startswith("+")}
    if mcpu is not None:
        implied = X86_CPU_FEATURES.get(mcpu)
        if implied is None:
            return None
        needed.update(implied)
    return frozenset(needed - {f[1:] for f in mattr if f.startswith("-")})


class TargetKind(str):
    """The kind of a target (``llvm``, ``cuda``, ...): a string that also has TVM's ``.name``."""

    @property
    def name(self) -> str:
        return str(self)


class Target:
    """A parsed target string (immutable: options cannot be changed after parsing).

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
    host : Target or None
    """

    __slots__ = ("host", "kind", "_text", "_attrs", "_keys")

    def __init__(self, target: str | Target, host: str | Target | None = None):
        if isinstance(target, Target):
            host = target.host if host is None else host
            target = str(target)
        _set = object.__setattr__
        _set(self, "host", None if host is None else as_target(host))
        if not isinstance(target, str) or not target.strip():
            raise TargetError(f"a target must be a non-empty string, got {target!r}")
        try:
            words = shlex.split(target)
        except ValueError as err:
            raise TargetError(f"cannot parse target string {target!r}: {err}") from None
        _set(self, "_text", " ".join(words))
        _set(self, "kind", TargetKind(words[0]))
        if self.kind.startswith("-"):
            raise TargetError(f"target string {target!r} must start with a kind such as 'llvm'")
        attrs: dict[str, str | tuple[str, ...]] = {}
        for word in words[1:]:
            if not word.startswith("-") or "=" not in word:
                raise TargetError(f"target option {word!r} in {target!r} is not of the form -name=value")
            name, value = word[1:].split("=", 1)
            if name == "target":  # legacy spelling of -mtriple
                name = "mtriple"
            attrs[name] = tuple(value.split(",")) if name in _LIST_OPTIONS else value
        _set(self, "_attrs", attrs)
        _set(self, "_keys", self._derive_keys())

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"Target is immutable: cannot set {name!r}")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"Target is immutable: cannot delete {name!r}")

    def __getstate__(self) -> dict[str, object]:
        return {name: getattr(self, name) for name in self.__slots__}

    def __setstate__(self, state: dict[str, object]) -> None:
        for name, value in state.items():
            object.__setattr__(self, name, value)

    def _derive_keys(self) -> tuple[str, ...]:
        if "keys" in self._attrs:
            return tuple(self._attrs["keys"])
        keys = list(_DEFAULT_KEYS.get(self.kind, []))
        triple = self.mtriple or ""
        is_arm = triple_arch(triple) in ("aarch64", "arm", "armv7l", "armv7")
        if self.kind == "llvm" and is_arm and "arm_cpu" not in keys:
            keys = ["arm_cpu"] + keys
        device = self._attrs.get("device")
        if device and device not in keys:
            keys = [str(device)] + keys
        return tuple(keys)

    @property
    def attrs(self) -> dict[str, object]:
        """Every ``-name=value`` option as written (lists for mattr, keys, libs); a copy."""
        return {k: list(v) if isinstance(v, tuple) else v for k, v in self._attrs.items()}

    @property
    def keys(self) -> list[str]:
        """Keys used to look up tuned configs (``["cpu"]`` for llvm); a copy."""
        return list(self._keys)

    @property
    def model(self) -> str:
        return str(self._attrs.get("model", "unknown"))

    @property
    def target_name(self) -> str:
        """The kind's name (``"llvm"``; TVM's older ``Target.target_name``, now ``kind.name``)."""
        return str(self.kind)

    @property
    def device_name(self) -> str:
        """The ``-device=`` option (``"arm_cpu"``), ``""`` without one (TVM's ``Target.device_name``)."""
        return str(self._attrs.get("device", ""))

    @property
    def mcpu(self) -> str | None:
        value = self._attrs.get("mcpu")
        return None if value is None else str(value)

    @property
    def mattr(self) -> list[str]:
        return list(self._attrs.get("mattr", ()))

    @property
    def mtriple(self) -> str | None:
        value = self._attrs.get("mtriple")
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
    def is_gpu(self) -> bool:
        """True when kernels for this target run in blocks of threads (its keys include ``gpu``):
        TVM's GPU meaning of a schedule's thread axes, shared stages and barriers applies."""
        return "gpu" in self._keys

    @property
    def is_host(self) -> bool:
        """True when code for this target can run in this process: an ``llvm`` target of this
        machine's architecture whose ``-mcpu``/``-mattr`` need no CPU feature this machine lacks
        (see :meth:`missing_on`; an ``-mcpu`` whose features are unknown here is trusted)."""
        if self.kind != "llvm" or triple_arch(self.llvm_triple) != triple_arch(host_triple()):
            return False
        return not self.missing_on(host_cpu(), host_features().split(","))

    def missing_on(self, cpu: str, features: Iterable[str]) -> list[str]:
        """The CPU features this target's ``-mcpu``/``-mattr`` need that a processor lacks.

        Parameters
        ----------
        cpu : str
            The processor's LLVM CPU name (an ``-mcpu`` naming it needs nothing more).
        features : iterable of str
            Its LLVM feature flags, ``+name`` (has) or ``-name`` (lacks).

        Returns
        -------
        list of str
            Sorted feature names (without ``+``) the processor reports it lacks.
        """
        needed = required_features(None if self.mcpu == cpu else self.mcpu, self.mattr)
        if needed is None:
            return []
        return sorted(needed & {f[1:] for f in features if f.startswith("-")})

    @property
    def vector_bits(self) -> int:
        """Widest SIMD register in bits, used to choose vector widths."""
        arch = triple_arch(self.llvm_triple)
        if arch == "x86_64":
            feats = self.llvm_features
            implied = X86_CPU_FEATURES.get(self.llvm_cpu, ())
            if "+avx512f" in feats or "avx512f" in implied:
                return 512
            if "+avx" in feats or "+avx2" in feats or "avx" in implied:
                return 256
            return 128
        return 128

    def __str__(self) -> str:
        # The string as written (whitespace normalised): records keep the user's spelling, so a
        # log read and written back is byte-identical and TVM parses what we write.
        return self._text

    def __repr__(self) -> str:
        return f"Target({self._text!r})"

    def _identity(self) -> tuple:
        return (self.kind, frozenset(self._attrs.items()), self.host)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Target) and self._identity() == other._identity()

    def __hash__(self) -> int:
        return hash(self._identity())

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
    """Return ``target`` as a Target; None means the current target, else the host (``llvm``).

    A Target is returned as is; equal strings give one shared (immutable) Target.
    """
    if target is None:
        return Target.current() or parse_target("llvm")
    return target if isinstance(target, Target) else parse_target(target)


@functools.lru_cache(maxsize=256)
def parse_target(text: str) -> Target:
    """Return the Target of a target string, parsed once per distinct string in this process.

    Parameters
    ----------
    text : str

    Returns
    -------
    Target

    Raises
    ------
    TargetError
        When the string is malformed.
    """
    return Target(text)


def host_arch() -> str:
    """Return the host's architecture name (``x86_64``, ``aarch64``)."""
    return triple_arch(platform.machine().lower())


def cuda(model: str = "unknown", arch: str | None = None, options: str | list[str] | None = None) -> Target:
    """TVM's ``tvm.target.cuda``: a ``cuda`` target, with ``-arch=`` (``"sm_80"``) when given.

    Parameters
    ----------
    model : str
        The GPU model (``-model=``; ``"unknown"`` leaves it out, as ``Target("cuda")`` has it).
    arch : str, optional
        The compute capability the PTX is for.
    options : str or list of str, optional
        More target options (``"-max_num_threads=512"``).

    Returns
    -------
    Target
    """
    opts = [options] if isinstance(options, str) else list(options or [])
    if model != "unknown":
        opts.insert(0, f"-model={model}")
    if arch:
        opts.insert(0, f"-arch={arch}")
    return parse_target(" ".join(["cuda", *opts]))
