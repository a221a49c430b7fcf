"""Argument arrays of a measured kernel: reproducible random inputs, guarded outputs on the device.

A kernel that writes one element past the end of an output returns normally and corrupts
memory silently, so each output is allocated *guarded* (on the CPU: ending just before an
inaccessible page, :func:`tunecli.engine.runtime.cpu.guarded_empty`): an overrun faults at
once and a worker process reports that as a runtime error.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

from tunecli.engine.runtime import Device
from tunecli.engine.runtime.device import DeviceArray

ArgSpecT = tuple[tuple[int, ...], str]


def normalize_arg_specs(specs: Iterable[object]) -> tuple[ArgSpecT, ...]:
    """Return ``((shape, dtype), ...)`` from ArgSpec objects, ``(shape, dtype)`` or ``(name, shape, dtype)``.

    Parameters
    ----------
    specs : iterable
        One entry per kernel argument.

    Returns
    -------
    tuple of (tuple of int, str)
    """
    out = []
    for spec in specs:
        if hasattr(spec, "shape") and hasattr(spec, "dtype"):
            shape, dtype = spec.shape, spec.dtype  # type: ignore[attr-defined]
        else:
            shape, dtype = spec[-2], spec[-1]  # type: ignore[index]
        out.append((tuple(int(d) for d in shape), str(dtype)))
    return tuple(out)


def output_indices_of(specs: Sequence[object]) -> tuple[int, ...]:
    """Indices of the output arguments: those flagged ``is_output``, else the last one.

    Parameters
    ----------
    specs : sequence
        ArgSpec-like objects (an ``is_output`` attribute is used when present).

    Returns
    -------
    tuple of int
    """
    flagged = tuple(i for i, s in enumerate(specs) if getattr(s, "is_output", False))
    return flagged or ((len(specs) - 1,) if specs else ())


def random_array(shape: Sequence[int], dtype: str, rng: np.random.Generator) -> np.ndarray:
    """Random contents for one argument: floats in [0, 1), integers in [0, 8), booleans 0/1."""
    dt = np.dtype(dtype)
    if dt.kind == "f":
        return rng.random(tuple(shape)).astype(dt)
    if dt.kind in "iu":
        return rng.integers(0, 8, size=tuple(shape)).astype(dt)
    if dt.kind == "b":
        return rng.integers(0, 2, size=tuple(shape)).astype(dt)
    raise ValueError(f"measure: unsupported argument dtype {dtype!r}")


def random_arguments(arg_specs: Sequence[ArgSpecT], seed: int) -> list[np.ndarray]:
    """Make one array per ``(shape, dtype)`` with reproducible random contents.

    The same ``seed`` and specs give the same arrays in every process, so a reference can be
    computed away from the kernel (in the tuner, or on an RPC client).

    Parameters
    ----------
    arg_specs : sequence of (shape, dtype)
    seed : int

    Returns
    -------
    list of numpy.ndarray
    """
    rng = np.random.default_rng(seed)
    return [random_array(shape, dtype, rng) for shape, dtype in arg_specs]


def given_arguments(arg_specs: Sequence[ArgSpecT], inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
    """Copies of the caller's arrays as the kernel's arguments (TVM's ``ref_input``), one per argument.

    Each array must have its argument's shape; its values are converted to the argument's dtype.

    Raises
    ------
    ValueError
        Naming the first argument whose array is missing or has another shape.
    """
    if len(inputs) != len(arg_specs):
        raise ValueError(f"ref_input has {len(inputs)} arrays, the kernel takes {len(arg_specs)} arguments")
    arrays = []
    for index, ((shape, dtype), given) in enumerate(zip(arg_specs, inputs, strict=True)):
        given = np.asarray(given)
        if tuple(given.shape) != tuple(shape):
            raise ValueError(f"ref_input array {index} has shape {tuple(given.shape)}, "
                             f"argument {index} of the kernel {tuple(shape)}")
        arrays.append(np.array(given, dtype=dtype, copy=True))
    return arrays


def kernel_arguments(device: Device, arg_specs: Sequence[ArgSpecT], seed: int,
                     output_indices: Iterable[int], poisoned: bool = False,
                     inputs: Sequence[np.ndarray] | None = None) -> list[DeviceArray]:
    """The seeded random arguments (or copies of ``inputs`` when given), copied to ``device``;
    outputs guarded (and poisoned if asked).

    Parameters
    ----------
    device : Device
        Where the kernel runs.
    arg_specs : sequence of (shape, dtype)
    seed : int
    output_indices : iterable of int
    poisoned : bool
        Fill the outputs with :func:`poison` values instead of random ones, so an element the
        kernel never writes is caught by the correctness check.
    inputs : sequence of numpy.ndarray, optional
        One array per argument to use instead of random contents (see :func:`given_arguments`).

    Returns
    -------
    list
        Arrays of ``device``, one per argument.
    """
    outputs = set(output_indices)
    arrays = []
    hosts = random_arguments(arg_specs, seed) if inputs is None else given_arguments(arg_specs, inputs)
    for index, host in enumerate(hosts):
        if index in outputs and poisoned:
            poison(host)
        arrays.append(device.copy_in(host, guarded=index in outputs))
    return arrays


def poison(array: np.ndarray) -> None:
    """Fill ``array`` with a value a correct kernel overwrites: NaN for floats, 0xA5 bytes else."""
    if array.dtype.kind == "f":
        array.fill(np.nan)
    else:
        array.view(np.uint8).fill(0xA5)
