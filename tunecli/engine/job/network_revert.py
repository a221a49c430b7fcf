"""A network that runs slower tuned than untuned: which of the log's records to set aside.

A record is its kernel timed alone.  In a network the kernel also pays what its own timing does
not see (layout transforms around it, the cache state its neighbours leave), and a record timed
in a lucky moment on a busy machine is faster than its kernel.  So ``apply`` of a network job
checks the network as a whole: when the tuned build is slower than the untuned one beyond the
noise (``time_stats.slower_beyond_noise``: medians of interleaved rounds more than
``SLOWER_THAN_UNTUNED`` apart, their quartiles apart), ``guard_network``

1. lists the tasks whose configs differ between the two builds (``differing_tasks``: the log's
   answer against the untuned build's, per task the tuned build runs); none means the two builds
   run the same kernels and the difference is the machine's noise; it times the two builds again,
   and a tuned build no slower beyond the noise this time is kept (a busy moment, not the records);
2. builds the network once per such task with that task alone reverted to the untuned build's
   config (``RevertedHistory``: the log answers every other workload) and times those builds
   beside the tuned and untuned ones, interleaved, ``GROUP`` at a time;
3. reverts together every task whose reversion alone makes the network faster than the tuned
   build beyond the noise, times that build beside the two again, and keeps it when it is faster
   than the tuned build beyond the noise, and the untuned build when that is faster still beyond
   the noise: the build ``apply`` exports.

``Guard.lines`` says which tasks were reverted, with the network's times with and without their
records, and how to make it permanent.  A tuned build made under a graph tuner's records
(``apply_graph_best``: layouts chosen for the whole network) is timed in step 1 beside the same
build without them (``GraphChoices``); when that is faster beyond the noise the graph tuner's
choices are set back (``Guard.graph_set_back``) and steps 2 and 3 start from it.

A log's ``"untuned"`` mark names the untuned config of the day of the tune; a mark the untuned
build no longer runs is not honoured by the ranking (``log.untuned_mark``), and ``stale_untuned``
lists those tasks, which ``apply`` reports whether or not the network is slower.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace

import numpy as np

from tunecli.engine.graph.build_module import BuiltGraph
from tunecli.engine.job.apply_device import run_on_job_device
from tunecli.engine.job.spec import Job
from tunecli.engine.log.history_best import ApplyHistoryBest, untuned_answer
from tunecli.engine.log.layout_choice import config_knobs
from tunecli.engine.measure.time_stats import TimeStats, slower_beyond_noise, time_stats
from tunecli.engine.target import Target
from tunecli.engine.task.config_source import config_source
from tunecli.engine.task.dispatcher import DispatchContext
from tunecli.engine.task.scope import fallback_warnings_silenced
from tunecli.engine.task.space import ConfigSpace
from tunecli.engine.task.workload_args import Workload

#: How many builds of one task set back are timed together (beside the tuned and untuned builds).
GROUP = 4
#: What ``guard_network`` times builds with: builds by name -> each one's rounds (None: it failed).
TimeBuilds = Callable[[Mapping[str, BuiltGraph]], Mapping[str, TimeStats | None]]


class RevertedHistory(DispatchContext):
    """``history``'s answers, except the untuned build's config for each of ``reverted`` workloads.

    Parameters
    ----------
    history : ApplyHistoryBest
    reverted : iterable of tuple
        Workloads answered as an untuned build answers them.
    """

    def __init__(self, history: ApplyHistoryBest, reverted: Iterable[Workload]) -> None:
        super().__init__()
        self.history = history
        self.reverted = frozenset(reverted)

    def _query_inside(self, target: Target | str | None, workload: Workload | None) -> ConfigSpace | None:
        if workload in self.reverted:
            return untuned_answer(target, workload)  # type: ignore[arg-type]
        return self.history.query(target, workload)  # type: ignore[arg-type]

    def __enter__(self) -> RevertedHistory:
        super().__enter__()
        self.history._old_ctx = self._old_ctx  # its records answer first, then what we were entered in
        return self

    def update(self, target: Target | str | None, workload: Workload, cfg: ConfigSpace) -> None:
        """Make ``cfg`` the history's answer (``ApplyHistoryBest.update``)."""
        self.history.update(target, workload, cfg)  # type: ignore[arg-type]


def same_config(a: ConfigSpace, b: ConfigSpace) -> bool:
    """Whether two dispatch answers give a template the same knobs."""
    return a is b or (config_knobs(a) is not None and config_knobs(a) == config_knobs(b))


def _anchors(build: BuiltGraph) -> list[Workload]:
    """The workloads of a build's tunable kernels, in the build's order, each once."""
    summary = build.summary
    return list(dict.fromkeys(a.workload for a in (*summary.tuned, *summary.nearest, *summary.fallback)))


def differing_tasks(tuned: BuiltGraph, untuned: BuiltGraph, history: ApplyHistoryBest,
                    target: Target) -> list[Workload]:
    """The workloads of the tuned build's kernels that the untuned build does not run (another
    implementation of the operator) or that the log's records answer with other knobs than an
    untuned build runs, in the build's order."""
    runs = set(_anchors(untuned))
    differing = []
    with fallback_warnings_silenced():
        for workload in _anchors(tuned):
            with target:
                if workload not in runs or not same_config(history.query(target, workload),
                                                           untuned_answer(target, workload)):
                    differing.append(workload)
    return differing


def stale_untuned(tuned: BuiltGraph, history: ApplyHistoryBest) -> list[Workload]:
    """The workloads of the tuned build with a record marked untuned (``"untuned"`` on its line: the
    config the untuned build ran when the log was tuned) that the untuned build no longer runs: the
    pre-tuned packages or the fallback rules changed since, so the ranking takes the record as an
    ordinary one (``ApplyHistoryBest.stale_marks``)."""
    stale = {workload for _, workload in history.stale_marks}
    return [workload for workload in _anchors(tuned) if workload in stale]


def stale_line(stale: list[Workload]) -> str:
    """What to tell of ``stale_untuned``'s workloads."""
    shown = ", ".join(workload_label(w) for w in stale[:3]) + (" ..." if len(stale) > 3 else "")
    return (f"{len(stale)} task(s) with a record marked untuned that the untuned build no longer runs (the "
            "pre-tuned packages or the fallback rules changed since the tune), ranked as an ordinary "
            f"record (`tunecli tune` measures today's untuned config): {shown}")


def workload_label(workload: Workload) -> str:
    """``"conv2d_NCHWc.x86 1x16x32x32 * 32x16x3x3"``: the template and its tensor shapes."""
    shapes = ["x".join(map(str, arg[1])) for arg in workload[1:]
              if isinstance(arg, tuple) and len(arg) == 3 and arg[0] == "TENSOR"]
    return " ".join([str(workload[0]), " * ".join(shapes)]).strip()


@dataclass(frozen=True)
class RevertedTask:
    """A task set back to the untuned build's config because its record made the network slower.

    Attributes
    ----------
    workload : tuple
    config : int
        The index of the log's config it had.
    untuned : str
        Where the untuned build's config comes from (``package``, ``nearest``, ``default``), or
        ``"another implementation"`` when the untuned build runs another template for the operator.
    with_record, without : float
        Median seconds per network run with the log's config, and with this task alone reverted.
    """

    workload: Workload
    config: int
    untuned: str
    with_record: float
    without: float

    @property
    def label(self) -> str:
        """``workload_label`` of its workload."""
        return workload_label(self.workload)


@dataclass(frozen=True)
class Guard:
    """What ``guard_network`` found and which build it keeps.

    Attributes
    ----------
    kept : {"tuned", "reverted", "untuned"}
        The build to export: the tuned one, the tuned one with ``reverted`` set back, or the
        untuned one (every differing task set back).
    build : BuiltGraph
    reverted : tuple of RevertedTask
    lines : tuple of str
        What to tell the user.
    """

    kept: str
    build: BuiltGraph
    reverted: tuple[RevertedTask, ...]
    lines: tuple[str, ...]
    #: the last timing's rounds of the tuned, untuned and (when timed) reverted builds
    times: Mapping[str, TimeStats] = field(default_factory=dict)
    #: whether the graph tuner's choices were set back (the kept build is built without them)
    graph_set_back: bool = False


@dataclass(frozen=True)
class GraphChoices:
    """The graph tuner's records a tuned build was built under (``apply_graph_best``).

    Attributes
    ----------
    path : str
        Their file (``model_spec.graph_log_path``).
    without : BuiltGraph
        The tuned build without them: every call answered by the log's records.
    build : callable
        ``build(context)``: the network built under a dispatch context without them.
    """

    path: str
    without: BuiltGraph
    build: Callable[[DispatchContext], BuiltGraph]


def guard_network(label: str, tuned: BuiltGraph, untuned: BuiltGraph, history: ApplyHistoryBest,
                  target: Target, build: Callable[[DispatchContext], BuiltGraph],
                  time_builds: TimeBuilds, graph: GraphChoices | None = None) -> Guard:
    """Find the tasks that make ``tuned`` slower than ``untuned`` and the fastest build (see the
    module docstring).

    Parameters
    ----------
    label : str
        The thread count the tuned build was slower at (``"1 thread"``), for the lines.
    tuned, untuned : BuiltGraph
    history : ApplyHistoryBest
        The log's records ``tuned`` was built with.
    target : Target
    build : callable
        ``build(context)``: the network built under a dispatch context, as ``tuned`` was.
    time_builds : callable
        Times builds by name, interleaved, at the thread count of ``label``.
    graph : GraphChoices, optional
        The graph tuner's records ``tuned`` was built under too: when the tuned build without them
        is faster beyond the noise, they are set back first, and the tasks are looked for in it.

    Returns
    -------
    Guard
    """
    differing = differing_tasks(tuned if graph is None else graph.without, untuned, history, target)
    if not differing and graph is None:
        return Guard("tuned", tuned, (), (
            f"{label}: the tuned build runs the untuned build's config in every kernel: the difference "
            "is the machine's timing noise, not the log's records",))
    without = {} if graph is None else {"without graph": graph.without}
    again = time_builds({"tuned": tuned, "untuned": untuned, **without})  # a slower reading: a busy moment?
    timed = {name: s for name, s in again.items() if s is not None}
    if not _faster(again.get("untuned"), again.get("tuned")):
        return Guard("tuned", tuned, (), (
            f"{label}: timed again, the tuned build is no slower than the untuned one beyond the noise "
            f"({_ms(timed, 'tuned')} vs {_ms(timed, 'untuned')}): kept the tuned build",), timed)
    # without a differing task the build without the graph tuner's choices runs the untuned build's
    # configs: the untuned build's reading counts for it too
    if graph is None or (differing and not _faster(again.get("without graph"), again.get("tuned"))):
        return _guard_tasks(label, tuned, untuned, history, target, build, time_builds, differing)
    line = (f"{label}: the graph tuner's choices ({graph.path}) made the network slower: "
            f"{_ms(timed, 'tuned')} with them, {_ms(timed, 'without graph')} without; set them back",)
    if not differing or not _faster(again.get("untuned"), again.get("without graph")):
        return Guard("reverted", graph.without, (), line + (
            f"{label}: kept the tuned build without the graph tuner's choices (untuned "
            f"{_ms(timed, 'untuned')}), the build exported",), timed, graph_set_back=True)
    found = _guard_tasks(label, graph.without, untuned, history, target, graph.build, time_builds, differing)
    if found.kept == "tuned":  # the build without the graph tuner's choices, no task set back
        return Guard("reverted", graph.without, (), line + (
            f"{label}: setting tasks back as well made it no faster beyond the noise: kept the tuned build "
            "without the graph tuner's choices, the build exported",), found.times, graph_set_back=True)
    return replace(found, graph_set_back=True, lines=line + found.lines)


def _guard_tasks(label: str, tuned: BuiltGraph, untuned: BuiltGraph, history: ApplyHistoryBest,
                 target: Target, build: Callable[[DispatchContext], BuiltGraph], time_builds: TimeBuilds,
                 differing: list[Workload]) -> Guard:
    """``guard_network``'s search for the tasks to set back, from ``tuned`` (steps 2 and 3)."""
    pairs: dict[int, tuple[TimeStats | None, TimeStats | None]] = {}  # per task: tuned, set back alone
    alone: dict[int, BuiltGraph] = {}
    for start in range(0, len(differing), GROUP):
        group = {i: build(RevertedHistory(history, [differing[i]]))
                 for i in range(start, min(start + GROUP, len(differing)))}
        named = {f"revert {i}": one for i, one in group.items()}
        stats = time_builds({"tuned": tuned, "untuned": untuned, **named})
        for i, one in group.items():
            pairs[i] = (stats.get("tuned"), stats.get(f"revert {i}"))
            if _faster(pairs[i][1], pairs[i][0]):
                alone[i] = one  # only the builds that help are kept in memory
    helps = sorted(alone)
    if len(helps) == 1 and len(differing) <= GROUP:  # timed beside the tuned and untuned builds already
        together = alone[helps[0]]
        final = {"tuned": pairs[helps[0]][0], "reverted": pairs[helps[0]][1], "untuned": stats.get("untuned")}
    else:
        together = build(RevertedHistory(history, [differing[i] for i in helps])) if helps else tuned
        final = dict(time_builds({"tuned": tuned, **({"reverted": together} if helps else {}),
                                  "untuned": untuned}))
    kept = "reverted" if helps and _faster(final.get("reverted"), final.get("tuned")) else "tuned"
    if _faster(final.get("untuned"), final.get(kept)):  # setting tasks back one by one was not enough
        kept = "untuned"
    set_back = list(range(len(differing))) if kept == "untuned" else helps if kept == "reverted" else []
    runs = set(_anchors(untuned))
    reverted = tuple(_reverted(differing[i], differing[i] in runs, history, target, *pairs[i])
                     for i in set_back)
    timed = {name: s for name, s in final.items() if s is not None}
    builds = {"tuned": tuned, "reverted": together, "untuned": untuned}
    return Guard(kept, builds[kept], reverted, _lines(label, kept, reverted, len(differing), timed), timed)


def device_timer(job: Job, inputs: Mapping[str, np.ndarray], outputs: dict[int, tuple[np.ndarray, ...]]
                 ) -> TimeBuilds:
    """A ``TimeBuilds`` that runs builds on the job's RPC device (``apply_device.run_on_job_device``: one
    session per call, each build's rounds in turn, by the device's clock); each build's outputs are
    kept in ``outputs`` by the build's ``id``."""
    def time_builds(timed: Mapping[str, BuiltGraph]) -> dict[str, TimeStats | None]:
        ran = run_on_job_device(job, dict(timed), inputs)
        outputs.update({id(timed[name]): run.outputs for name, run in ran.runs.items()})
        return {name: time_stats(ran.runs[name].results) if name in ran.runs else None for name in timed}
    return time_builds


def _faster(candidate: TimeStats | None, tuned: TimeStats | None) -> bool:
    """Whether ``candidate`` is faster than ``tuned`` beyond the noise."""
    return slower_beyond_noise(tuned, candidate)


def _reverted(workload: Workload, same_template: bool, history: ApplyHistoryBest, target: Target,
              tuned: TimeStats | None, alone: TimeStats | None) -> RevertedTask:
    with fallback_warnings_silenced(), target:
        mine = history.query(target, workload)
    return RevertedTask(workload, int(getattr(mine, "index", -1)),
                        config_source(untuned_answer(target, workload)).kind if same_template
                        else "another implementation",
                        _median(tuned), _median(alone))


def _median(stats: TimeStats | None) -> float:
    return stats.median if stats is not None else float("nan")


def _ms(timed: Mapping[str, TimeStats], name: str) -> str:
    return f"{timed[name].median * 1e3:.4g} ms" if name in timed else "not timed"


def _lines(label: str, kept: str, reverted: tuple[RevertedTask, ...], differing: int,
           timed: Mapping[str, TimeStats]) -> tuple[str, ...]:
    def ms(name: str) -> str:
        return _ms(timed, name)

    if kept == "tuned":
        return (f"{label}: setting back the {differing} tasks configured otherwise than untuned, one at a "
                f"time or together, made the network no faster beyond the noise (tuned {ms('tuned')}, "
                f"untuned {ms('untuned')}): kept the tuned build",)
    tasks = f"task{'s' if len(reverted) > 1 else ''}"
    what = "the untuned build (every task's record set aside)" if kept == "untuned" else \
        f"the tuned build with {len(reverted)} {tasks} set back to the untuned build's config " \
        f"(of {differing} configured otherwise)"
    lines = [f"{label}: the tuned build ran slower than the untuned one ({ms('tuned')} vs {ms('untuned')}); "
             f"kept {what} ({ms(kept)}), the build exported"]
    for task in reverted:
        then = "the untuned build's implementation" if task.untuned == "another implementation" else \
            f"the untuned config ({task.untuned})"
        lines.append(f"  set back: {task.label}: config {task.config} of the log -> {then}; the network ran "
                     f"{task.with_record * 1e3:.4g} ms with the record, {task.without * 1e3:.4g} ms with "
                     "only this task set back")
    lines.append("  apply checks this each time it runs; to make it permanent, remove those configs' lines "
                 "from the log, or tune those tasks longer")
    return tuple(lines)
