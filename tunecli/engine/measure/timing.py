"""Load a kernel object, check its answer and time it — the code behind every worker boundary.

:func:`measure_object` takes and returns pure data (:class:`MeasureRequest` →
:class:`MeasureReply`), so the local runner's worker and an RPC device server's worker run the
same function. It follows TVM's ``time_evaluator``:

1. load the object on the device of the request's target (``Device.load``; on the CPU: link it
   into this process's LLJIT; on a CUDA GPU: load the PTX) and make the arguments there:
   random inputs from ``seed``, each output guarded against overruns
   (:mod:`tunecli.engine.measure.arrays`);
2. one untimed warm-up call. With a reference (``ref_outputs``) or ``return_outputs`` the
   outputs are first poisoned (NaN), so an element the kernel never writes is caught. Then
   untimed calls until ``warmup_ms`` have passed (TVM has no such step; see below);
3. ``repeat`` rounds of ``number`` calls, timing each round; while a round lasts less than
   ``min_repeat_ms``, ``number`` grows to ``max(min_repeat_ms / per_call + 1, number * 1.618)``
   and the round is re-timed (the grown ``number`` carries over); each round gives seconds per
   call. With ``enable_cpu_cache_flush`` :data:`FLUSH_BYTES` of scratch memory are written
   before each round (TVM's flush preprocessor; meant for ``number=1``). The flush has a fixed
   size rather than "more than the last-level cache": virtual machines can report caches far
   larger than any kernel's data, and flushing those would cost more than the kernel.

Why the timed warm-up: a core that has been idle for a while (a virtual machine's core above
all) runs at a fraction of its speed for its first tens of milliseconds of work, so a parallel
kernel timed right after a pause (TVM's default ``cooldown_interval``) or a build times far
below its speed, and timing rounds of a few milliseconds (TVM's ``number``/``repeat``
defaults) fall entirely inside that slow start.  ``benchmarks/bench_measure_stability.py``
measures it (the figures behind the default are in ``benchmarks/README.md``).

Post-processing (dropping the min and max of more than two costs) is the runner's job, as in
TVM. A kernel that crashes or hangs takes this process with it, so always call this in a
:class:`tunecli.engine.measure.worker.Worker`.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import NoReturn

import numpy as np

from tunecli.engine.codegen import ArgSpec, CompiledKernel
from tunecli.engine.codegen.backend_table import backend_for
from tunecli.engine.codegen.compiled_kernel import LaunchShape
from tunecli.engine.measure.arrays import ArgSpecT, kernel_arguments, normalize_arg_specs
from tunecli.engine.measure.result import MeasureErrorNo
from tunecli.engine.measure.timing_options import TimingOptions
from tunecli.engine.measure.worker import CallStatus, Worker
from tunecli.engine.ops.tolerance import scaled_tolerance
from tunecli.engine.runtime import Device, device_for_target
from tunecli.engine.runtime.device import DeviceArray, LoadedKernel
from tunecli.engine.target import Target
from tunecli.errors import DeviceError

#: Bytes written by the cache flush before each timed round.
FLUSH_BYTES = 64 * 1024 * 1024
#: What a request's object is compiled for: this host (its device comes from the runtime's table).
HOST_TARGET = "llvm"
#: ``"module:function"`` of :func:`measure_object`, for :class:`Worker` calls.
MEASURE_FUNC = "tunecli.engine.measure.timing:measure_object"
#: Exit status of a measurement worker ended by a device fault (see :func:`_end_worker`).
DEVICE_FAULT_EXIT = 70
_state: dict[str, np.ndarray] = {}
#: What a measurement that produced no reply means (the child died: a crashing kernel).
_WORKER_FAILURES = {CallStatus.DIED: MeasureErrorNo.RUNTIME_DEVICE,
                    CallStatus.TIMEOUT: MeasureErrorNo.RUN_TIMEOUT}


@dataclass(frozen=True)
class MeasureRequest:
    """One kernel to load, check and time.

    Attributes
    ----------
    obj : bytes
        Relocatable object file for this host holding the kernel.
    entry_name : str
        Symbol of ``void entry(void* arg0, void* arg1, ...)``.
    arg_specs : tuple of (shape, dtype)
        One entry per argument, in call order (ArgSpec objects are accepted too).
    timing : TimingOptions
        How to time it: ``number``, ``repeat``, ``min_repeat_ms`` (TVM's ``time_evaluator``
        parameters), ``warmup_ms``, ``enable_cpu_cache_flush`` (write :data:`FLUSH_BYTES`
        before each timed round) and ``timeout`` (enforced by the worker's parent, not here).
    seed : int
        Seed of the random inputs (:func:`tunecli.engine.measure.arrays.random_arguments`).
    ref_outputs : tuple of (arg index, raw bytes)
        Expected contents of outputs after one call on the seeded inputs; a mismatch gives
        WRONG_ANSWER.
    rtol, atol : float, optional
        Tolerances of the check (``numpy.isclose``) when given; None (the default) means the
        output dtype's rule, :func:`tunecli.engine.ops.tolerance.scaled_tolerance`, which
        ``apply`` checks with too. Integers must match exactly.
    output_indices : tuple of int
        Which arguments are outputs (placed before guard pages, poisoned before the checked
        call); empty means the last one.
    return_outputs : bool
        Send the outputs of the warm-up call back (to make a reference).
    target : Target or None
        What ``obj`` was compiled for, which decides the device that runs it (``cuda``: PTX
        on a CUDA GPU); None means this host's CPU.
    launch : LaunchShape or None
        Grid and block of a GPU kernel.
    inputs : tuple of numpy.ndarray or None
        The arguments' contents (TVM's ``ref_input``), one array per argument, instead of the
        seeded random ones; None means random.
    """

    obj: bytes
    entry_name: str
    arg_specs: tuple[ArgSpecT, ...]
    timing: TimingOptions = TimingOptions()
    seed: int = 0
    ref_outputs: tuple[tuple[int, bytes], ...] = field(default=())
    rtol: float | None = None
    atol: float | None = None
    output_indices: tuple[int, ...] = ()
    return_outputs: bool = False
    target: Target | None = None
    launch: LaunchShape | None = None
    inputs: tuple[np.ndarray, ...] | None = field(default=None, compare=False)


@dataclass(frozen=True)
class MeasureReply:
    """What :func:`measure_object` answers.

    Attributes
    ----------
    costs : tuple of float
        Seconds per call, one per repeat (empty on error).
    error_no : int
        A :class:`MeasureErrorNo` value: NO_ERROR, RUNTIME_DEVICE (the object cannot be
        loaded or the arguments made) or WRONG_ANSWER.
    error : str
        What went wrong ("" on success).
    run_time : float
        Seconds spent in :func:`measure_object`.
    outputs : tuple of (arg index, raw bytes)
        Outputs of the warm-up call when ``return_outputs`` was set.
    """

    costs: tuple[float, ...]
    error_no: int = int(MeasureErrorNo.NO_ERROR)
    error: str = ""
    run_time: float = 0.0
    outputs: tuple[tuple[int, bytes], ...] = field(default=())


def _flush() -> None:
    """Evict caches by writing :data:`FLUSH_BYTES` of scratch memory."""
    if "scratch" not in _state:
        _state["scratch"] = np.empty(FLUSH_BYTES // 8, dtype=np.float64)
    _state["scratch"].fill(1.0)


def compare_outputs(arrays: Mapping[int, np.ndarray], ref_outputs: tuple[tuple[int, bytes], ...],
                    rtol: float | None = None, atol: float | None = None) -> str:
    """Compare outputs (host copies by argument index) with raw expected bytes, within ``rtol`` and
    ``atol`` where given and :func:`~tunecli.engine.ops.tolerance.scaled_tolerance` otherwise.

    Returns "" or a description of the first mismatch.
    """
    for index, raw in ref_outputs:
        actual = arrays[index].reshape(-1)
        expected = np.frombuffer(raw, dtype=actual.dtype)
        if expected.size != actual.size:
            return f"reference of argument {index} has {expected.size} elements, the kernel {actual.size}"
        if actual.dtype.kind in "fc":
            rule_rtol, rule_atol = scaled_tolerance(expected, actual.dtype)
            ok = np.isclose(actual, expected, rtol=rule_rtol if rtol is None else rtol,
                            atol=rule_atol if atol is None else atol)
        else:
            ok = actual == expected
        if not ok.all():
            bad = int(np.argmin(ok))
            return (f"argument {index}: {int(ok.size - ok.sum())} of {ok.size} elements differ from the "
                    f"reference (first at flat index {bad}: {actual[bad]!r} vs {expected[bad]!r})")
    return ""


def measure_object(request: MeasureRequest) -> MeasureReply:
    """Load, check and time one kernel; failures that do not kill the process become replies.

    Parameters
    ----------
    request : MeasureRequest

    Returns
    -------
    MeasureReply
        Costs in seconds per call; or RUNTIME_DEVICE when the object cannot be loaded or its
        arguments made, WRONG_ANSWER when an output differs from ``ref_outputs``.  A launch that
        fails on the device (a GPU kernel's fault) ends the process instead: its context cannot
        be used again, and the worker's parent reports RUNTIME_DEVICE and replaces it.
    """
    start = time.perf_counter()
    specs = normalize_arg_specs(request.arg_specs)
    outputs = request.output_indices or ((len(specs) - 1,) if specs else ())
    checked = bool(request.ref_outputs or request.return_outputs)
    try:
        target = request.target or Target(HOST_TARGET)
        device = device_for_target(target)
        kernel = CompiledKernel(request.obj, request.entry_name,
                                tuple(ArgSpec(f"arg{i}", shape, dtype, i in outputs)
                                      for i, (shape, dtype) in enumerate(specs)), target,
                                object_format=backend_for(target).object_format, launch=request.launch)
        loaded = device.load(kernel)
        arrays = kernel_arguments(device, specs, request.seed, outputs, poisoned=checked,
                                  inputs=request.inputs)
    except Exception as err:  # noqa: BLE001 - a kernel that cannot be loaded is data
        return MeasureReply((), int(MeasureErrorNo.RUNTIME_DEVICE), f"{type(err).__name__}: {err}",
                            time.perf_counter() - start)
    try:
        return _run(request, device, loaded, arrays, outputs, checked, start)
    except DeviceError as err:  # a faulting GPU kernel leaves its context unusable
        _end_worker(err)


def _run(request: MeasureRequest, device: Device, loaded: LoadedKernel, arrays: list[DeviceArray],
         outputs: tuple[int, ...], checked: bool, start: float) -> MeasureReply:
    """The checked warm-up launch and the timed rounds of :func:`measure_object`."""
    warm_start = time.perf_counter()
    device.launch(loaded, arrays)  # the warm-up launch, whose outputs are checked
    device.sync()
    got = {i: device.copy_out(arrays[i]) for i in outputs} if checked else {}
    mismatch = compare_outputs(got, request.ref_outputs, request.rtol, request.atol)
    if mismatch:
        return MeasureReply((), int(MeasureErrorNo.WRONG_ANSWER), mismatch, time.perf_counter() - start)
    returned = tuple((i, got[i].tobytes()) for i in outputs) if request.return_outputs else ()
    timing = request.timing
    warmup_left_ms = max(0.0, timing.warmup_ms - (time.perf_counter() - warm_start) * 1e3)
    costs = device.time(loaded, arrays, timing.number, timing.repeat, timing.min_repeat_ms,
                        warmup_ms=warmup_left_ms,
                        before_repeat=_flush if timing.enable_cpu_cache_flush else None, warmup=0)
    return MeasureReply(tuple(costs), int(MeasureErrorNo.NO_ERROR), "", time.perf_counter() - start,
                        returned)


def _end_worker(err: DeviceError) -> NoReturn:
    """End this worker process after a device fault; its parent reports RUNTIME_DEVICE and starts
    a fresh worker (with a fresh device context), as for a kernel that crashed the CPU."""
    sys.stderr.write(f"tunecli measurement worker: {err}\n")
    sys.stderr.flush()
    os._exit(DEVICE_FAULT_EXIT)


def measure_in_worker(worker: Worker, request: MeasureRequest) -> MeasureReply:
    """Run :func:`measure_object` in ``worker`` (the parent's side of the worker boundary).

    Parameters
    ----------
    worker : Worker
        Replaced by a fresh child when the kernel kills or hangs it.
    request : MeasureRequest
        ``request.timing.timeout`` bounds the call.

    Returns
    -------
    MeasureReply
        The child's reply; RUNTIME_DEVICE when the child died (a crashing kernel), RUN_TIMEOUT
        when it was killed for running past the timeout, UNKNOWN_ERROR when it raised.
    """
    outcome = worker.call(MEASURE_FUNC, request, request.timing.timeout)
    if outcome.status is CallStatus.OK:
        return outcome.value
    error_no = _WORKER_FAILURES.get(outcome.status, MeasureErrorNo.UNKNOWN_ERROR)
    return MeasureReply((), int(error_no), outcome.detail, outcome.elapsed)
