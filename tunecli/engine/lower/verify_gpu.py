"""GPU verification: a lowered kernel within a device's limits (TVM's ``verify_gpu_code``).

Checked before compiling, so a schedule that could never launch is an instantiation error of
its config rather than a launch failure: threads per block and per axis, static shared memory
per block, local memory (registers) per block, virtual threads and vector widths.  The limits
come from the target's options (TVM's names: ``-max_threads_per_block`` or
``-max_num_threads``, ``-max_shared_memory_per_block``, ``-max_local_memory_per_block``,
``-registers_per_block``, ``-max_vthread``, ``-max_vector_bytes``), else the defaults of a CUDA
device of compute capability 8.0 or later.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from tunecli.engine.ir import expr as E
from tunecli.engine.ir import stmt as S
from tunecli.engine.ir.dtype import parse_dtype
from tunecli.engine.ir.visitor import post_order
from tunecli.engine.target import Target
from tunecli.errors import InstantiationError, TargetError

from .thread_scope import launch_extents
from .virtual_thread import VTHREADS_ATTR, vthread_count

_UNLIMITED = 2**63 - 1


@dataclass(frozen=True)
class GPULimits:
    """What one block of a kernel may use on the device."""

    max_threads_per_block: int = 1024
    max_thread_x: int = 1024
    max_thread_y: int = 1024
    max_thread_z: int = 64
    max_shared_memory_per_block: int = 48 * 1024  # static shared memory
    registers_per_block: int = 65536  # 32-bit registers
    max_local_memory_per_block: int = _UNLIMITED  # TVM's default: bytes of local arrays per thread
    max_vthread: int = _UNLIMITED
    max_vector_bytes: int = 16

    @classmethod
    def from_target(cls, target: Target) -> GPULimits:
        """The defaults, with each limit ``target`` sets as an option (TargetError if not an int)."""
        values: dict[str, int] = {}
        attrs = target.attrs
        aliases = {"max_num_threads": "max_threads_per_block"}
        for option, field in [(f.name, f.name) for f in dataclasses.fields(cls)] + list(aliases.items()):
            if option in attrs:
                try:
                    values[field] = int(str(attrs[option]))
                except ValueError:
                    raise TargetError(f"target {str(target)!r}: -{option}={attrs[option]} is not an "
                                      "integer") from None
        return cls(**values)


def _bytes(buf: S.Buffer) -> int:
    return buf.size * parse_dtype(buf.dtype).bits // 8


def verify_gpu_code(func: S.PrimFunc, limits: GPULimits) -> list[str]:
    """What ``func`` exceeds of ``limits``, one message per violation (empty when it fits)."""
    errors = []
    launch = launch_extents(func.body, f"kernel {func.name}")
    threads = 1
    for axis, limit in zip("xyz", (limits.max_thread_x, limits.max_thread_y, limits.max_thread_z),
                           strict=True):
        n = launch.get(f"threadIdx.{axis}", 1)
        threads *= n
        if n > limit:
            errors.append(f"threadIdx.{axis} has {n} threads, more than {limit}")
    if threads > limits.max_threads_per_block:
        errors.append(f"{threads} threads per block, more than {limits.max_threads_per_block}")
    shared: dict[int, S.Buffer] = {}
    local: dict[int, S.Buffer] = {}
    vthreads = [func.attrs.get(VTHREADS_ATTR) or vthread_count(func.body)]
    vector_bytes = [0]

    def see(n: object) -> None:
        if isinstance(n, S.Allocate):
            {"shared": shared, "local": local}.get(n.buffer.scope, {})[id(n.buffer)] = n.buffer
        elif isinstance(n, (S.BufferStore, E.BufferLoad)):
            value = n.value if isinstance(n, S.BufferStore) else n
            t = parse_dtype(value.dtype)
            vector_bytes[0] = max(vector_bytes[0], t.lanes * t.bits // 8)

    post_order(func.body, see)
    shared_bytes = sum(_bytes(b) for b in shared.values())
    if shared_bytes > limits.max_shared_memory_per_block:
        errors.append(f"{shared_bytes} bytes of shared memory per block, more than "
                      f"{limits.max_shared_memory_per_block}")
    local_bytes = sum(_bytes(b) for b in local.values())
    if local_bytes > limits.max_local_memory_per_block:
        errors.append(f"{local_bytes} bytes of local memory per thread, more than "
                      f"{limits.max_local_memory_per_block}")
    registers = -(-local_bytes // 4) * threads
    if registers > limits.registers_per_block:
        errors.append(f"local arrays of {local_bytes} bytes in each of {threads} threads need "
                      f"{registers} registers per block, more than {limits.registers_per_block}")
    if vthreads[0] > limits.max_vthread:
        errors.append(f"{vthreads[0]} virtual threads, more than {limits.max_vthread}")
    if vector_bytes[0] > limits.max_vector_bytes:
        errors.append(f"a vector access of {vector_bytes[0]} bytes, more than {limits.max_vector_bytes}")
    return errors


def check_gpu_code(func: S.PrimFunc, target: Target) -> None:
    """Raise InstantiationError naming the kernel and every limit of ``target`` it exceeds."""
    errors = verify_gpu_code(func, GPULimits.from_target(target))
    if errors:
        raise InstantiationError(f"kernel {func.name} does not fit target {str(target)!r}: "
                                 + "; ".join(errors))
