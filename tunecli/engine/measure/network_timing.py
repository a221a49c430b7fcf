"""Running a whole network in a measurement worker, for ``apply`` of a model job.

``run_network`` (called in a :class:`~tunecli.engine.measure.worker.Worker`) loads an exported
library (``tunecli.runtime.load_module``: as a user's program would) or an ONNX model in
onnxruntime's CPU provider, sets the thread count, runs it on the given inputs and times it
(``time_calls``: warm-up, ``number`` runs per result).  Loaded libraries and sessions are kept for
the worker's life, so the rounds of an interleaved comparison only time.  onnxruntime's threads
are told not to spin after a run (``session.intra_op.allow_spinning``), so they leave the cores
to the next contender; numpy's BLAS is held to one thread (it only prepares inputs here).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypeAlias

import numpy as np

from tunecli.engine.measure.timing_options import TimingOptions
from tunecli.engine.runtime import GraphModule, cpu, time_calls
from tunecli.engine.runtime.blas import set_blas_threads
from tunecli.engine.runtime.graph_library import load_module
from tunecli.engine.runtime.threads import set_num_threads

#: ``"module:function"`` of :func:`run_network`, for :class:`Worker` calls.
RUN_NETWORK_FUNC = "tunecli.engine.measure.network_timing:run_network"

if TYPE_CHECKING:
    import onnxruntime

#: A loaded network's ``run()`` and ``outputs()`` (the outputs of the last run).
RunAndOutputs: TypeAlias = tuple[Callable[[], None], Callable[[], list[np.ndarray]]]

_loaded: dict[tuple, GraphModule | onnxruntime.InferenceSession] = {}


@dataclass(frozen=True)
class NetworkRun:
    """One network to run (and time) in a worker.

    Attributes
    ----------
    library : str or None
        An exported library (``export_library``).
    onnx : str or None
        Or an ONNX file, run by onnxruntime.
    inputs : dict of str to ndarray
    threads : int
    timing : TimingOptions or None
        None: run once, only for the outputs.
    """

    library: str | None
    onnx: str | None
    inputs: dict[str, np.ndarray] = field(repr=False)
    threads: int = 1
    timing: TimingOptions | None = None


@dataclass(frozen=True)
class NetworkReply:
    """Seconds per run (one per timing repeat) and the outputs of the first run."""

    costs: tuple[float, ...] = ()
    outputs: tuple[np.ndarray, ...] = field(default=(), repr=False)


def run_network(request: NetworkRun) -> NetworkReply:
    """Run (and time) a network in this process (a worker).

    Parameters
    ----------
    request : NetworkRun

    Returns
    -------
    NetworkReply
    """
    set_blas_threads(1)
    run, outputs = _library(request) if request.library is not None else _session(request)
    run()
    first = tuple(np.array(o, copy=True) for o in outputs())
    t = request.timing
    if t is None:
        return NetworkReply((), first)
    costs = time_calls(run, (), t.number, t.repeat, t.min_repeat_ms, warmup_ms=t.warmup_ms)
    return NetworkReply(tuple(costs), ())


def _library(request: NetworkRun) -> RunAndOutputs:
    key = ("library", request.library)
    if key not in _loaded:
        _loaded[key] = load_module(str(request.library))["default"](cpu())
    module = _loaded[key]
    set_num_threads(request.threads)
    for name, value in request.inputs.items():
        module.set_input(name, value)
    return module.run, lambda: [module.get_output(i).numpy() for i in range(module.get_num_outputs())]


def _session(request: NetworkRun) -> RunAndOutputs:
    import onnxruntime

    key = ("onnx", request.onnx, request.threads)
    if key not in _loaded:
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = request.threads
        options.inter_op_num_threads = 1
        options.execution_mode = onnxruntime.ExecutionMode.ORT_SEQUENTIAL
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        _loaded[key] = onnxruntime.InferenceSession(str(request.onnx), options,
                                                    providers=["CPUExecutionProvider"])
    session = _loaded[key]
    result: list[np.ndarray] = []

    def run() -> None:
        result[:] = session.run(None, request.inputs)

    return run, lambda: result
