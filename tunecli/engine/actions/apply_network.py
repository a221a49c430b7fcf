"""``apply_network``: build a model job's network with the log's best configs, check it, time it.

The network is built (``relay.build`` at ``opt_level=3``) under ``apply_history_best`` of the log
and, when the job has a ``graph_tuner`` and its output exists (``model_spec.graph_log_path``),
under ``apply_graph_best`` of that too; and once more without any record (the untuned build:
fallback configs).  The tuned build's output is checked against onnxruntime for an ONNX model
(when installed) and otherwise against the graph evaluated op by op with the numpy references
(the interpreter).  Both builds are exported and timed in a measurement worker
(``measure.network_timing``), on one thread and on all cores, beside onnxruntime (when
installed) running the ONNX model, or the built-in model written as ONNX
(``onnx_export.to_onnx``): the contenders timed in turn (``measure.interleaved``: one round
each, ``repeat`` rounds, a pause after each; each latency the median of its rounds).  numpy's
BLAS in this process keeps to one thread (``runtime.blas.single_blas_thread``) while the
interpreter computes the reference and kernels are timed.  The report keeps the rounds'
statistics (``measure.time_stats``) and says, one line each, when the tuned build is slower
than the untuned one (``slower``), when rounds disagree and when the machine was busy (``notes``).

When the tuned build is slower than the untuned one beyond the noise at a thread count, the graph
tuner's choices (when applied) and the tasks whose records make it slower are found and set back
(``network_revert.guard_network``: the network rebuilt without the graph tuner's records and with
each differing task reverted, timed interleaved); the fastest build is checked and is the one
exported (``kept``, ``reverted``, ``graph_set_back``, ``guard``: what was set back and why).

A network for a target this machine cannot run, of a job measured through RPC, runs on a device
of the job's key instead (``job.apply_device.run_on_job_device``): both builds are shipped as
archives the device loads, run there on the same inputs (the tuned output checked against the
host's reference) and timed by the device's clock (``latencies`` holds one entry, ``threads`` 0:
the device's own); a tuned build slower there is guarded alike (``network_revert.device_timer``).
"""

from __future__ import annotations

import contextlib
import importlib.util
import itertools
import os
import shutil
import tempfile
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import numpy as np

from tunecli.engine.graph.build_module import BuiltGraph
from tunecli.engine.graph.frontend.onnx_export import to_onnx
from tunecli.engine.graph.interpreter import evaluate
from tunecli.engine.graph_tuner.graph_best import ApplyGraphBest
from tunecli.engine.job.apply_device import run_on_job_device
from tunecli.engine.job.export_path import check_export, write_whole
from tunecli.engine.job.model_spec import graph_log_path
from tunecli.engine.job.network import Network, build_network, load_network
from tunecli.engine.job.network_report import NetworkApplyReport, NetworkLatency, threads_text
from tunecli.engine.job.network_revert import (
    GraphChoices,
    Guard,
    TimeBuilds,
    device_timer,
    guard_network,
    stale_line,
    stale_untuned,
)
from tunecli.engine.job.spec import Job
from tunecli.engine.log.history_best import ApplyHistoryBest
from tunecli.engine.log.log_files import check_log_file
from tunecli.engine.log.plausibility import plausible
from tunecli.engine.log.record import read_log
from tunecli.engine.measure.interleaved import Contender, median_seconds, time_interleaved
from tunecli.engine.measure.network_timing import RUN_NETWORK_FUNC, NetworkReply, NetworkRun
from tunecli.engine.measure.result import MeasureErrorNo
from tunecli.engine.measure.time_stats import (
    LoadWindow,
    TimeStats,
    slower_beyond_noise,
    time_stats,
)
from tunecli.engine.measure.timing import MeasureReply
from tunecli.engine.measure.timing_options import TimingOptions
from tunecli.engine.measure.worker import CallStatus, Worker
from tunecli.engine.runtime.blas import single_blas_thread
from tunecli.engine.task.dispatcher import DispatchContext
from tunecli.errors import GraphError, JobError, TuneError

_SEED = 0


def apply_network(job: Job, log: str, export: str | None = None,
                  on_step: Callable[[str], None] | None = None) -> NetworkApplyReport:
    """Build, check, time (and export) a model job's network with the best configs of ``log``.

    Parameters
    ----------
    job : Job
        A model job.
    log : str
    export : str, optional
        Write the kept build here (the tuned one unless tasks were set back, see ``kept``;
        ``export_library``: a ``.so`` that ``tunecli.runtime.load_module`` loads in any process),
        once it is checked and timed; a text model of several sequence lengths writes one library per
        length (``out/bert.so`` -> ``out/bert.seq32.so``, ``out/bert.seq128.so``).  Checked
        before anything is built, written through a temporary name (``job.export_path``).
    on_step : callable, optional
        Told what each long step starts doing (``"building the tuned network"``).

    Returns
    -------
    NetworkApplyReport
        Of the job's network (the first sequence length; the others in ``others``).

    Raises
    ------
    JobError
        For a bad model; RecordError when the log cannot be read.
    """
    shapes = job.model.sample_shapes if job.model is not None else ()
    if export is not None:  # before anything is built or timed
        for path in [export] if len(shapes) <= 1 else [_length_path(export, shape[0]) for shape in shapes]:
            check_export(str(path), directory=False)
    network = load_network(job)
    check_log_file(log)
    step = on_step or (lambda text: None)
    if len(shapes) <= 1:
        return _apply_one(job, network, log, export, step)
    reports = [_apply_one(job, network if i == 0 else load_network(job, shape), log,
                          _length_path(export, shape[0]), step) for i, shape in enumerate(shapes)]
    reports[0].others = reports[1:]
    return reports[0]


def _length_path(export: str | None, seq_len: int) -> str | None:
    """Where the library of one sequence length goes: ``out/bert.so`` -> ``out/bert.seq128.so``."""
    if export is None:
        return None
    path = Path(export)
    return str(path.with_name(f"{path.stem}.seq{seq_len}{path.suffix}"))


def _apply_one(job: Job, network: Network, log: str, export: str | None,
               step: Callable[[str], None]) -> NetworkApplyReport:
    """``apply_network`` of one network of the job."""
    graph_log = graph_log_path(log) if job.graph_tuner is not None else None
    report = NetworkApplyReport(job.name, log, network.label, str(job.target),
                                graph_log=str(graph_log) if graph_log is not None and graph_log.exists()
                                else None)
    if report.graph_log is not None:
        report.graph_log_stale = Path(report.graph_log).stat().st_mtime < Path(log).stat().st_mtime
    history = ApplyHistoryBest([(r.inp, r.result) for r in plausible(read_log(log))])
    start = time.perf_counter()
    try:
        step(f"building {network.label} with the best configs")
        tuned = _build(job, network, history, report.graph_log)
        step(f"building {network.label} untuned")
        untuned = _build(job, network, None, None)
    except TuneError as err:
        report.error = f"the network does not build: {err}"
        return report
    report.build_seconds = time.perf_counter() - start
    report.summary, report.kernels = tuned.summary.line(), len(tuned.kernels)
    stale = stale_untuned(tuned, history)
    if stale:
        report.guard.append(stale_line(stale))
    if not job.target.is_host:
        _apply_on_device(report, job, network, history, {"tuned": tuned, "untuned": untuned}, export, step)
        return report
    inputs = network.random_inputs(_SEED)
    with tempfile.TemporaryDirectory(prefix="tunecli_apply_") as tmp, single_blas_thread():
        onnx, report.onnxruntime = _onnx_model(network, tmp)
        libraries = {}
        for name, lib in (("tuned", tuned), ("untuned", untuned)):
            libraries[name] = os.path.join(tmp, f"{name}.so")
            lib.export_library(libraries[name])
        worker = _network_worker()
        try:
            step("checking the tuned network's output")
            _check(report, job, network, worker, libraries["tuned"], inputs, onnx)
            if report.error is None:
                _time(report, job, worker, libraries, inputs, onnx, step)
            kept = _guard(report, job, network, worker, history, {"tuned": tuned, "untuned": untuned},
                          inputs, onnx, tmp, step) if report.error is None else None
            if kept is not None:
                libraries[report.kept] = kept
        finally:
            worker.close()
        if export is not None:
            write_whole(export, lambda partial: shutil.copyfile(libraries[report.kept], partial))
            report.export = export
    return report


def _guard(report: NetworkApplyReport, job: Job, network: Network, worker: Worker, history: ApplyHistoryBest,
           builds: dict[str, BuiltGraph], inputs: dict[str, np.ndarray], onnx: str | None, tmp: str,
           step: Callable[[str], None]) -> str | None:
    """When the tuned build was slower than the untuned one at a thread count, set back the tasks
    whose records make it slower (``network_revert.guard_network``); the kept build's library
    (checked), or None when the tuned build is kept."""
    slow = [lat.threads for lat in report.latencies if lat.tuned and lat.untuned and slower_beyond_noise(
        lat.tuned_stats or time_stats([lat.tuned]), lat.untuned_stats or time_stats([lat.untuned]))]
    if not slow:
        return None
    step(f"finding the tasks that make the tuned network slower on {threads_text(slow[0])}")
    made = {builds[name]: os.path.join(tmp, f"{name}.so") for name in ("tuned", "untuned")}
    numbers = itertools.count()

    def time_builds(timed: dict[str, BuiltGraph]) -> dict[str, TimeStats | None]:
        """Time ``timed`` in a worker of their own (a worker keeps every library it loaded, and a big
        network's libraries hold its weights), each set-back build exported under a new name."""
        paths = {name: made.get(build) or os.path.join(tmp, f"guard-{next(numbers)}.so")
                 for name, build in timed.items()}
        own = _network_worker()
        try:
            for name, build in timed.items():
                if build not in made:
                    build.export_library(paths[name])
            contenders = {name: _contender(own, NetworkRun(paths[name], None, inputs, slow[0]),
                                           _timeout(job)) for name in timed}
            replies = time_interleaved(contenders, job.runner.timing)
        finally:
            own.close()
            for name, build in timed.items():
                if build not in made and os.path.exists(paths[name]):
                    os.remove(paths[name])
        return {name: time_stats(reply) for name, reply in replies.items()}

    guard = _run_guard(report, job, network, history, builds, threads_text(slow[0]), time_builds, step)
    if guard.kept == "tuned":
        return None
    library = made.get(guard.build) or os.path.join(tmp, "kept.so")
    if guard.build not in made:
        guard.build.export_library(library)
    checked = NetworkApplyReport(report.job, report.log, report.model, report.target)
    _check(checked, job, network, worker, library, inputs, onnx)
    if checked.correct is False or checked.error is not None:
        report.guard.append(f"kept the tuned build: the {guard.kept} build's output is wrong")
        return None
    report.kept = guard.kept
    return library


def _run_guard(report: NetworkApplyReport, job: Job, network: Network, history: ApplyHistoryBest,
               builds: dict[str, BuiltGraph], label: str, time_builds: TimeBuilds,
               step: Callable[[str], None]) -> Guard:
    """``network_revert.guard_network`` of the builds (the graph tuner's choices too, when applied),
    its findings added to the report."""
    graph = None
    if report.graph_log is not None:
        step("building the network without the graph tuner's choices")
        graph = GraphChoices(report.graph_log, _build(job, network, history, None),
                             lambda context: _build(job, network, context, None))
    guard = guard_network(label, builds["tuned"], builds["untuned"], history, job.target,
                          lambda context: _build(job, network, context, report.graph_log), time_builds, graph)
    report.guard, report.reverted = report.guard + list(guard.lines), list(guard.reverted)
    report.graph_set_back, report.guard_times = guard.graph_set_back, dict(guard.times)
    return guard


def _build(job: Job, network: Network, history: DispatchContext | None, graph_log: str | None) -> BuiltGraph:
    """The network built under ``history`` and the graph tuner's records (without ``history``: the
    untuned build); its summary line goes to the report, not to the log."""
    graph_best = ApplyGraphBest(graph_log) if graph_log else contextlib.nullcontext()
    kernels_best = history if history is not None else contextlib.nullcontext()
    return build_network(network, job.target, kernels_best, graph_best)


def _onnx_model(network: Network, folder: str) -> tuple[str | None, str]:
    """The ONNX file onnxruntime runs for ``network`` (a built-in one written into ``folder``), or
    None; and what the report says of onnxruntime."""
    if importlib.util.find_spec("onnxruntime") is None:
        return None, "not installed (pip install 'tunecli[bench]')"
    if network.onnx is not None:
        return network.onnx, f"runs {network.onnx}"
    try:
        data = to_onnx(network.mod, network.params)
    except (GraphError, ImportError) as err:
        return None, f"not compared: the model has no ONNX form ({err})"
    path = os.path.join(folder, "model.onnx")
    with open(path, "wb") as f:
        f.write(data)
    return path, "runs the model written as ONNX"


def _network_worker() -> Worker:
    """A worker process that runs ``measure.network_timing``'s requests."""
    return Worker(preload=(RUN_NETWORK_FUNC.partition(":")[0],), name="tunecli-network")


def _call(worker: Worker, request: NetworkRun, timeout: float) -> tuple[NetworkReply | None, str | None]:
    outcome = worker.call(RUN_NETWORK_FUNC, request, timeout)
    if outcome.status is CallStatus.OK:
        return outcome.value, None
    return None, f"{outcome.status.name}: {outcome.detail.strip().splitlines()[-1] if outcome.detail else ''}"


def _timeout(job: Job) -> float:
    return max(60.0, 20 * job.runner.timing.timeout)


def _check(report: NetworkApplyReport, job: Job, network: Network, worker: Worker, library: str,
           inputs: dict[str, np.ndarray], onnx: str | None) -> None:
    """Compare the tuned build with onnxruntime (an ONNX model) or the interpreter (built-ins)."""
    got, error = _call(worker, NetworkRun(library, None, inputs, thread_counts()[-1]), _timeout(job))
    if got is None:
        report.error = f"the tuned network failed to run: {error}"
        return
    report.compare(list(got.outputs), _reference(report, job, network, worker, inputs, onnx))


def _reference(report: NetworkApplyReport, job: Job, network: Network, worker: Worker | None,
               inputs: dict[str, np.ndarray], onnx: str | None) -> list[np.ndarray]:
    """The outputs the tuned build must give: onnxruntime's (an ONNX model, run in ``worker``) or
    the interpreter's (built-ins); ``report.checked_against`` says which."""
    if onnx is not None and network.onnx is not None and worker is not None:
        expected, error = _call(worker, NetworkRun(None, onnx, inputs, 1), _timeout(job))
        if expected is None:
            raise JobError(f"{job.path}: onnxruntime cannot run {network.onnx}: {error}")
        report.checked_against = "onnxruntime"
        return list(expected.outputs)
    value = evaluate(network.mod, inputs={**network.params, **inputs})
    report.checked_against = "interpreter"
    return [np.asarray(v.numpy() if hasattr(v, "numpy") else v)
            for v in (value if isinstance(value, (tuple, list)) else [value])]


def _apply_on_device(report: NetworkApplyReport, job: Job, network: Network, history: ApplyHistoryBest,
                     builds: dict[str, BuiltGraph], export: str | None, step: Callable[[str], None]) -> None:
    """Run both builds on the job's RPC device, check the tuned output against the host's reference,
    time them (the device's clock), guard a slower tuned build as here (``_run_guard``, timed on the
    device) and export the kept build (a job measured by no device: the tuned build, built only)."""
    inputs = network.random_inputs(_SEED)
    ran = run_on_job_device(job, builds, inputs)
    report.device, kept = ran.device or None, builds["tuned"]
    if "tuned" not in ran.runs:
        report.error = ran.error
    else:
        onnx = network.onnx if importlib.util.find_spec("onnxruntime") is not None else None
        report.onnxruntime = (f"checks the device's output ({onnx})" if onnx is not None
                              else "not run: the network runs on the device")
        worker = _network_worker() if onnx else None
        try:
            with single_blas_thread():
                reference = _reference(report, job, network, worker, inputs, onnx)
        finally:
            if worker is not None:
                worker.close()
        report.compare(list(ran.runs["tuned"].outputs), reference)
        stats = {name: time_stats(run.results) for name, run in ran.runs.items()}
        untuned = ran.runs.get("untuned")  # only a comparison: its failure is no error of the apply
        report.latencies.append(NetworkLatency(0, ran.runs["tuned"].mean, untuned.mean if untuned else None,
                                               None, stats["tuned"], stats.get("untuned")))
        if report.correct and slower_beyond_noise(stats["tuned"], stats.get("untuned")):
            step("finding the tasks that make the tuned network slower on the device")
            outputs: dict[int, tuple[np.ndarray, ...]] = {}
            guard = _run_guard(report, job, network, history, builds, threads_text(0),
                               device_timer(job, inputs, outputs), step)
            if guard.kept != "tuned" and id(guard.build) in outputs:  # each build timed gave its outputs
                checked = NetworkApplyReport(report.job, report.log, report.model, report.target)
                checked.compare(list(outputs[id(guard.build)]), reference)
                if checked.correct:
                    report.kept, kept = guard.kept, guard.build
                else:
                    report.guard.append(f"kept the tuned build: the {guard.kept} build's output is wrong")
    if export is not None:
        write_whole(export, kept.export_library)
        report.export = export


def thread_counts() -> list[int]:
    """1 and all cores of this machine (one entry on a single core)."""
    cores = len(os.sched_getaffinity(0))
    return [1] if cores == 1 else [1, cores]


def _time(report: NetworkApplyReport, job: Job, worker: Worker, libraries: dict[str, str],
          inputs: dict[str, np.ndarray], onnx: str | None, step: Callable[[str], None]) -> None:
    window = LoadWindow()
    for threads in thread_counts():
        step(f"timing the builds on {threads_text(threads)}")
        runs = {name: NetworkRun(path, None, inputs, threads) for name, path in libraries.items()}
        if onnx is not None:
            runs["onnxruntime"] = NetworkRun(None, onnx, inputs, threads)
        contenders = {name: _contender(worker, run, _timeout(job)) for name, run in runs.items()}
        times = time_interleaved(contenders, job.runner.timing)
        if times["tuned"].error_no:
            report.error = f"the tuned network failed on {threads} thread(s): {times['tuned'].error}"
        names = ("tuned", "untuned", "onnxruntime")
        report.latencies.append(NetworkLatency(threads, *(median_seconds(times.get(n)) for n in names),
                                               *(time_stats(times.get(n)) for n in names)))
    report.load = window.finish()


def _contender(worker: Worker, run: NetworkRun, timeout: float) -> Contender:
    """One round of ``run`` in ``worker``, as a contender of ``measure.interleaved``."""
    def measure(timing: TimingOptions) -> MeasureReply:
        reply, error = _call(worker, replace(run, timing=timing), timeout)
        if reply is None:
            return MeasureReply((), int(MeasureErrorNo.RUNTIME_DEVICE), error)
        return MeasureReply(reply.costs)
    return measure
