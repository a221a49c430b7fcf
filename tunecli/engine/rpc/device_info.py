"""What a device server runs kernels on, and whether a job's target can run there.

A server describes its processor in every session that asks (the ``describe`` op of
:mod:`tunecli.engine.rpc.session`): LLVM's triple, CPU name and feature flags of the process
that loads the kernels, and the compute capability of its CUDA GPU when it has one (device 0:
what a ``cuda`` measurement runs on). A runner compares its task's target with it before measuring anything,
so that a job compiled for another machine stops with one clear error instead of logging a
failed measurement per config.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from tunecli.engine.codegen.nvptx_backend import sm_arch
from tunecli.engine.runtime.cuda import CUDADevice
from tunecli.engine.target import Target, as_target, host_cpu, host_features, host_triple, triple_arch
from tunecli.errors import DeviceError, RPCError


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
    gpu : str
        Compute capability of the server's CUDA GPU (``"9.0"``); ``""`` when it has no usable
        CUDA driver and GPU.
    """

    key: str
    triple: str
    cpu: str
    features: tuple[str, ...] = ()
    gpu: str = ""

    @property
    def arch(self) -> str:
        """The architecture (``x86_64``, ``aarch64``)."""
        return triple_arch(self.triple)

    def describe(self) -> str:
        """One line for messages: key, triple, CPU and GPU."""
        gpu = f", CUDA GPU sm_{self.gpu.replace('.', '')}" if self.gpu else ""
        name = f"device {self.key!r}" if self.key else "device"
        return f"{name} ({self.triple}, cpu {self.cpu}{gpu})"

    def mismatch(self, target: Target | str) -> str:
        """Why kernels built for ``target`` cannot run on this device ("" when they can).

        The architectures must agree, and no feature the target needs (its ``-mattr=+x``, those
        its ``-mcpu`` implies) may be one the device reports as missing (``-x``), as for
        :attr:`Target.is_host <tunecli.engine.target.Target.is_host>`.
        """
        target = as_target(target)
        if target.is_gpu:
            return self._gpu_mismatch(target)
        if target.kind != "llvm":
            return f"target {str(target)!r} is not a CPU target; {self.describe()} runs CPU objects"
        wanted = triple_arch(target.llvm_triple)
        if wanted != self.arch:
            return (f"the job's target {str(target)!r} compiles for {wanted} ({target.llvm_triple}), but "
                    f"{self.describe()} is {self.arch}: set the job's target to "
                    f"'llvm -mtriple={self.triple}' (with its -mattr) or use devices of another key")
        missing = target.missing_on(self.cpu, self.features)
        if missing:
            return (f"the job's target {str(target)!r} asks for {', '.join('+' + f for f in missing)}, which "
                    f"{self.describe()} does not have")
        return ""

    def _gpu_mismatch(self, target: Target) -> str:
        if not self.gpu:
            return (f"the job's target {str(target)!r} runs on an NVIDIA GPU, but {self.describe()} has no "
                    "CUDA driver/GPU: use devices of another key")
        wanted = int(sm_arch(target)[3:].rstrip("af"))
        major, _, minor = self.gpu.partition(".")
        if wanted > int(major) * 10 + int(minor or 0):
            return (f"the job's target {str(target)!r} compiles for sm_{wanted}, newer than the GPU of "
                    f"{self.describe()}: set the job's target to 'cuda -arch=sm_{major}{minor}'")
        return ""

    def as_dict(self) -> dict:
        """The wire form (see :func:`from_dict`); ``gpu`` only when there is one."""
        wire = {"key": self.key, "triple": self.triple, "cpu": self.cpu, "features": list(self.features)}
        return {**wire, "gpu": self.gpu} if self.gpu else wire

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
        features, gpu = data.get("features", []), data.get("gpu", "")
        if not all(isinstance(v, str) for v in fields.values()) or not isinstance(features, list) \
                or not all(isinstance(f, str) for f in features) or not isinstance(gpu, str) \
                or (gpu and not re.fullmatch(r"\d+\.\d+", gpu)):
            raise RPCError(f"rpc session: malformed device description {data!r}")
        return cls(fields["key"], fields["triple"], fields["cpu"], tuple(features), gpu)


def this_device(key: str) -> DeviceInfo:
    """The DeviceInfo of the processor (and CUDA GPU 0) this process runs on, for device key ``key``."""
    features = tuple(f for f in host_features().split(",") if f)
    return DeviceInfo(key, host_triple(), host_cpu(), features, cuda_capability())


def cuda_capability() -> str:
    """The compute capability of this machine's CUDA GPU 0 (``"9.0"``), ``""`` when there is none."""
    gpu = CUDADevice(0)
    try:
        return gpu.compute_version
    except DeviceError:
        return ""
