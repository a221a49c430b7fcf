"""What ``apply_network`` reports of a model job's network: its check, its times, the build it kept."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

import numpy as np

from tunecli.engine.job.network_revert import RevertedTask
from tunecli.engine.log.record import JsonValue
from tunecli.engine.measure.time_stats import (
    MachineLoad,
    TimeStats,
    rounds_note,
    slower_than_untuned,
    time_stats,
)
from tunecli.engine.ops.tolerance import matches_reference


@dataclass
class NetworkLatency:
    """Seconds per run of each contender at one thread count (None: not timed or failed)."""

    threads: int
    tuned: float | None = None
    untuned: float | None = None
    onnxruntime: float | None = None
    #: the rounds of each contender (the times above are their medians; None on a device)
    tuned_stats: TimeStats | None = None
    untuned_stats: TimeStats | None = None
    onnxruntime_stats: TimeStats | None = None


@dataclass
class NetworkApplyReport:
    """The result of ``apply_network``; ``as_dict()`` is the JSON form.

    Attributes
    ----------
    summary : str
        The tuned build's line ``"11 of 12 tasks tuned; 1 fell back: ..."``.
    kernels : int
        Kernels (fused groups) of the tuned build.
    checked_against : str or None
        ``"onnxruntime"`` or ``"interpreter"`` (the numpy references, op by op).
    onnxruntime : str
        Whether onnxruntime was compared with, or why not.
    """

    job: str
    log: str
    model: str
    target: str
    graph_log: str | None = None
    graph_log_stale: bool = False  #: the graph tuner's file is older than the log's last records
    summary: str = ""
    kernels: int = 0
    build_seconds: float = 0.0
    checked_against: str | None = None
    correct: bool | None = None
    max_error: float | None = None
    #: the reference output is (nearly) the same number everywhere, so the check cannot tell a
    #: wrong network (random weights whose activations die out give a uniform softmax)
    check_uninformative: bool = False
    latencies: list[NetworkLatency] = field(default_factory=list)
    onnxruntime: str = ""
    device: str | None = None  #: the RPC device the network ran on (None: this machine)
    export: str | None = None
    error: str | None = None
    load: MachineLoad | None = None  #: the load average around the timing (run on this machine)
    #: the same of the job's other sequence lengths (a text model of several: one library each)
    others: list[NetworkApplyReport] = field(default_factory=list)
    #: the build exported: "tuned", "reverted" (some tasks set back to the untuned config: ``reverted``)
    #: or "untuned", when the tuned build was slower (``network_revert.guard_network``)
    kept: str = "tuned"
    reverted: list[RevertedTask] = field(default_factory=list)
    graph_set_back: bool = False  #: the kept build is built without the graph tuner's choices
    guard: list[str] = field(default_factory=list)  #: what the check of a slower tuned build found
    #: that check's last timing: the rounds of the tuned, untuned and reverted builds, by name
    guard_times: dict[str, TimeStats] = field(default_factory=dict)

    def compare(self, got: list[np.ndarray], reference: list[np.ndarray]) -> None:
        """Check the tuned build's outputs ``got`` against ``reference`` (``correct``, ``max_error``,
        ``check_uninformative``)."""
        self.correct, self.max_error = matches_reference(got, reference)
        self.check_uninformative = all(nearly_constant(np.asarray(r)) for r in reference)

    @property
    def ok(self) -> bool:
        """False when the tuned build (of any sequence length) gave a wrong answer or failed to run."""
        return self.correct is not False and self.error is None and all(o.ok for o in self.others)

    @property
    def slower(self) -> list[str]:
        """One line per thread count where the tuned build is slower than the untuned one."""
        lines = (slower_than_untuned(threads_text(lat.threads), lat.tuned_stats or time_stats([lat.tuned]),
                                     lat.untuned_stats or time_stats([lat.untuned]))
                 for lat in self.latencies if lat.tuned and lat.untuned)
        return [line for line in lines if line]

    @property
    def notes(self) -> list[str]:
        """What makes the times doubtful: a busy machine, rounds that disagree."""
        busy = self.load.note() if self.load is not None else None
        rounds = (rounds_note(threads_text(lat.threads), {"tuned": lat.tuned_stats,
                                                           "untuned": lat.untuned_stats,
                                                           "onnxruntime": lat.onnxruntime_stats})
                  for lat in self.latencies)
        return ([busy] if busy else []) + [note for note in rounds if note]

    def as_dict(self) -> dict[str, JsonValue]:
        """Return a JSON-serialisable dict."""
        return dict(asdict(self), ok=self.ok, slower=self.slower, notes=self.notes,
                    others=[o.as_dict() for o in self.others])


def threads_text(threads: int) -> str:
    """``"1 thread"``, ``"2 threads"``; ``"the device"`` for 0 (timed by an RPC device's clock)."""
    return f"{threads} thread{'s' if threads > 1 else ''}" if threads else "the device"


def nearly_constant(values: np.ndarray) -> bool:
    """Whether ``values`` spread less than a millionth of their magnitude (or are empty)."""
    if not values.size or not np.issubdtype(values.dtype, np.number):
        return not values.size
    scale = float(np.max(np.abs(values)))
    return float(np.ptp(values)) <= 1e-6 * scale
