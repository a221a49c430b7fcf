"""A built network run on a device server: exported, uploaded, loaded, run and timed there in one
call (what ``apply`` of a model job measured through RPC needs, and TVM's tutorial does by hand).
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from tunecli.engine.graph.library_export import export_graph
from tunecli.engine.rpc.remote import RemoteSession
from tunecli.engine.runtime.graph_library import CompiledGraph


@dataclass(frozen=True)
class RemoteRun:
    """What one network run on a device gave.

    Attributes
    ----------
    outputs : tuple of numpy.ndarray
        The graph's outputs, in order, for the inputs given.
    results : tuple of float
        Seconds per run, one per repeat (the device's clock).
    library : str
        The file name the library had on the device.
    """

    outputs: tuple[np.ndarray, ...]
    results: tuple[float, ...]
    library: str

    @property
    def mean(self) -> float:
        """Mean seconds per run."""
        return float(np.mean(self.results)) if self.results else float("nan")


def run_on_device(session: RemoteSession, lib: CompiledGraph, inputs: Mapping[str, ArrayLike],
                  number: int = 1, repeat: int = 3, min_repeat_ms: float = 0.0,
                  fcompile: str | Callable[..., None] | None = None,
                  name: str | None = None) -> RemoteRun:
    """Ship ``lib`` through ``session``, run it once on ``inputs``, then time it.

    Parameters
    ----------
    session : RemoteSession
        A session with a device that can run the library (``device_session.request_device`` with
        the build's target checks that).
    lib : CompiledGraph
        What ``relay.build`` returned.
    inputs : mapping of str to array
        The graph's inputs by name.
    number, repeat, min_repeat_ms : int, int, float
        TVM's ``time_evaluator`` settings.
    fcompile : str or callable, optional
        Link a shared library with this compiler (see ``export_library``); default: a ``.tar`` the
        device loads itself.
    name : str, optional
        The library's file name on the device (default ``net.tar`` / ``net.so``).

    Raises
    ------
    RPCError
        When the device refuses the library or the session fails.
    """
    name = name or ("net.tar" if fcompile is None else "net.so")
    with tempfile.TemporaryDirectory(prefix="tunecli_ship_") as tmp:
        path = os.path.join(tmp, name)
        export_graph(lib, path, fcompile)
        session.upload(path, name)
    rlib = session.load_module(name)
    dev = session.cuda(0) if lib.target.is_gpu else session.cpu(0)
    module = rlib["default"](dev)
    for key, value in inputs.items():
        module.set_input(key, np.asarray(value))
    module.run()
    outputs = tuple(module.get_output(i).numpy() for i in range(module.get_num_outputs()))
    timing = module.module.time_evaluator("run", dev, number=number, repeat=repeat,
                                          min_repeat_ms=min_repeat_ms)()
    return RemoteRun(outputs, tuple(timing.results), name)
