"""What a device server runs kernels on, and whether a job's target can run there.

A server describes its processor in every session that asks (the ``describe`` op of
:mod:`tunecli.engine.rpc.session`): LLVM's triple, CPU name and feature flags of the process
that loads the kernels. A runner compares its task's target with it before measuring anything,
so that a job compiled for another machine stops with one clear error instead of logging a
failed measurement per config.
"""

from __future__ import annotations

from dataclasses import dataclass

from tunecli.engine.target import Target, as_target, host_cpu, host_features, host_triple, triple_arch
from tunecli.errors import RPCError


@dataclass(frozen=True)
class DeviceInfo:
    """A device server's processor, as LLVM names it.

    Attributes
    ----------
    key : str
        The device key the server registered with.
    triple : str
        LLVM's triple of the server process (``aarch64-unknown-linux-gnu``).
    cpu : str
        LLVM's name of its CPU (``cortex-a72``; ``generic`` when LLVM cannot tell).
    features : tuple of str
        Feature flags LLVM detected, each ``+name`` or ``-name``; a feature not listed is unknown.
    """

    key: str
    triple: str
    cpu: str
    features: tuple[str, ...] = ()

    @property
    def arch(self) -> str:
        """The architecture (``x86_64``, ``aarch64``)."""
        return triple_arch(self.triple)

    def describe(self) -> str:
        """One line for messages: key, triple and CPU."""
        return f"device {self.key!r} ({self.triple}, cpu {self.cpu})"

    def mismatch(self, target: Target | str) -> str:
        """Why kernels built for ``target`` cannot run on this device ("" when they can).

        The architectures must agree, and no feature the target asks for (``-mattr=+x``) may
        be one the device reports as missing (``-x``).
        """
        target = as_target(target)
        if target.kind != "llvm":
            return f"target {str(target)!r} is not a CPU target; {self.describe()} runs CPU objects"
        wanted = triple_arch(target.llvm_triple)
        if wanted != self.arch:
            return (f"the job's target {str(target)!r} compiles for {wanted} ({target.llvm_triple}), but "
                    f"{self.describe()} is {self.arch}: set the job's target to "
                    f"'llvm -mtriple={self.triple}' (with its -mattr) or use devices of another key")
        missing = sorted(f for f in target.mattr if f.startswith("+") and "-" + f[1:] in self.features)
        if missing:
            return (f"the job's target {str(target)!r} asks for {', '.join(missing)}, which "
                    f"{self.describe()} does not have")
        return ""

    def as_dict(self) -> dict:
        """The wire form (see :func:`from_dict`)."""
        return {"key": self.key, "triple": self.triple, "cpu": self.cpu, "features": list(self.features)}

    @classmethod
    def from_dict(cls, data: object) -> DeviceInfo:
        """Rebuild a DeviceInfo received from the network, validating it.

        Raises
        ------
        RPCError
            When a field is missing or of the wrong type.
        """
        if not isinstance(data, dict):
            raise RPCError(f"rpc session: device description {data!r} is not an object")
        fields = {name: data.get(name) for name in ("key", "triple", "cpu")}
        features = data.get("features", [])
        if not all(isinstance(v, str) for v in fields.values()) or not isinstance(features, list) \
                or not all(isinstance(f, str) for f in features):
            raise RPCError(f"rpc session: malformed device description {data!r}")
        return cls(fields["key"], fields["triple"], fields["cpu"], tuple(features))


def this_device(key: str) -> DeviceInfo:
    """The DeviceInfo of the processor this process runs on, for device key ``key``."""
    features = tuple(f for f in host_features().split(",") if f)
    return DeviceInfo(key, host_triple(), host_cpu(), features)
