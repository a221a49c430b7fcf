"""``apply_kernels``: build each task of a job with its best logged config, check and benchmark it.

For every task: the best config of the log is looked up as TVM's ``apply_history_best`` does (a task
without a valid record gets the fallback config, with a warning); the kernel is built, its output
checked against the task's numpy reference (float64: for the check only; or, without one, against the
untuned config), and timed next to the untuned config (what a build without a log runs: a pre-tuned
package's record of the workload, else the nearest package record's config, else the template's fallback
config, ``history_best.untuned_answer``; its source is kept as ``default_source``) and numpy's way of
computing the operator in the kernel's dtype (the strategy row's ``baseline``, ``ops.baseline``).
``export`` writes ``.o``, ``.ll`` and ``.s`` files of the tuned kernels, named after the job and the
workload (``kernel_stem``): the destination is checked before anything is built, and the files are
written into a temporary directory and moved into it at the end (``job.export_path``), so an apply that
fails or is killed leaves no partial export. Records of the log that are faster than any machine
(``log.plausibility``) are skipped, naming their line.

Kernels run where tuning runs them (:mod:`tunecli.engine.job.apply_device`), with the job's runner
settings: in a measurement worker process on this machine, with the numpy baseline in a worker process
of its own (``measure.baseline_timing``: numpy's BLAS on the kernels' thread count), while this
process's BLAS keeps to one thread (``runtime.blas.single_blas_thread``: the spinning threads of a
multi-threaded OpenBLAS slow the kernels timed beside them); or, for a job measured through RPC for a
target this machine cannot run (an ARM board), on a device of the job's key, where numpy is not timed
(its time on this machine compares with nothing). A job for another machine without an RPC runner only
builds and exports its kernels. The three are timed in turn (``measure.interleaved``: one round each,
``repeat`` times, a pause after each round; each time is the median of its rounds), so a slow moment of
the machine is shared rather than charged to one of them; the rounds' statistics are kept
(``measure.time_stats``), with a note when they disagree, when the tuned kernel is far slower than the
log's time of the same config, when it is slower than the untuned config, and when the machine was busy
while timing. Where the machine was busy or a task's rounds disagree, the median is uncertain: the task
is marked ``uncertain`` and each contender's fastest round (``*_fastest``, what the kernel can do when
nothing runs beside it) is shown beside its median. A tuned config that is the untuned one (no record,
or the log's best is it) is timed once for both: two timings of one kernel differ by noise. A kernel
that crashes or hangs, or a config that does not build, becomes that task's ``error``; the other tasks
are still built, checked and timed.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace

import numpy as np

from tunecli.engine.build import build
from tunecli.engine.job.apply_device import ApplyDevice, open_apply_device
from tunecli.engine.job.export_path import ExportDirectory, check_export
from tunecli.engine.job.spec import Job
from tunecli.engine.job.tasks import create_tasks
from tunecli.engine.log.history_best import ApplyHistoryBest, untuned_answer
from tunecli.engine.log.log_files import check_log_file
from tunecli.engine.log.plausibility import plausible
from tunecli.engine.log.record import JsonValue, read_log
from tunecli.engine.measure.arrays import ArgSpecT, normalize_arg_specs, random_arguments
from tunecli.engine.measure.baseline_timing import BASELINE_FUNC, BaselineRequest
from tunecli.engine.measure.builder import output_arguments
from tunecli.engine.measure.interleaved import Contender, median_seconds, time_interleaved
from tunecli.engine.measure.result import MeasureErrorNo
from tunecli.engine.measure.time_stats import (
    LoadWindow,
    MachineLoad,
    TimeStats,
    compare_with_log,
    median_uncertain,
    rounds_note,
    slower_than_untuned,
    time_stats,
)
from tunecli.engine.measure.timing import MeasureReply, MeasureRequest
from tunecli.engine.measure.timing_options import TimingOptions
from tunecli.engine.measure.worker import CallStatus, Worker
from tunecli.engine.ops.registry import baseline_of
from tunecli.engine.ops.tolerance import matches_reference
from tunecli.engine.runtime import Module
from tunecli.engine.runtime.blas import single_blas_thread
from tunecli.engine.runtime.linker import OBJECT_BLOB_SUFFIX
from tunecli.engine.runtime.threads import get_num_threads
from tunecli.engine.task.config_source import config_source
from tunecli.engine.task.space import ConfigEntity, ConfigSpace
from tunecli.engine.task.task import Task
from tunecli.engine.task.text import config_text, task_label
from tunecli.errors import RPCError

_SEED = 0


@dataclass
class AppliedTask:
    """What ``apply_kernels`` found for one task (times in seconds; None where not measured)."""

    index: int
    label: str
    flop: float
    config: str
    fallback: bool
    checked_against: str | None = None
    correct: bool | None = None
    max_error: float | None = None
    tuned: float | None = None
    #: the untuned config's time: what a build without a log runs (``default_source`` says whence)
    default: float | None = None
    numpy: float | None = None
    numpy_baseline: str | None = None  #: what the numpy time is of ("float32 a @ w.T, 2 threads")
    files: list[str] = field(default_factory=list)
    error: str | None = None  #: why the tuned kernel was not built, checked or timed
    #: the rounds of each contender (``tuned``, ``default``, ``numpy`` are their medians)
    tuned_stats: TimeStats | None = None
    default_stats: TimeStats | None = None
    numpy_stats: TimeStats | None = None
    log_time: float | None = None  #: the log's time of the applied config (None: not from the log)
    #: what makes its times doubtful: rounds that disagree, a time far above the log's, a tuned
    #: kernel slower than the untuned config (``measure.time_stats``)
    notes: list[str] = field(default_factory=list)
    #: where the untuned build takes its config from: ``"package"``, ``"nearest"`` or ``"default"``
    #: (``ConfigSource.kind``; None when it was not built)
    default_source: str | None = None
    default_config: str | None = None  #: the untuned config (``config_text``)
    #: the median is uncertain (the machine was busy, or rounds disagree): the fastest rounds are shown
    uncertain: bool = False

    def fastest(self) -> dict[str, float | None]:
        """Each contender's fastest round in seconds, by JSON field (``tuned_fastest``, ...)."""
        return {f"{who}_fastest": stats.low if stats is not None else None
                for who, stats in (("tuned", self.tuned_stats), ("default", self.default_stats),
                                   ("numpy", self.numpy_stats))}

    @property
    def vs_log(self) -> float | None:
        """The applied time over the log's time of the same config."""
        return self.tuned / self.log_time if self.tuned and self.log_time else None

    @property
    def gflops(self) -> float | None:
        """GFLOPS of the tuned kernel."""
        return self.flop / self.tuned / 1e9 if self.flop and self.tuned else None


@dataclass
class ApplyReport:
    """The result of ``apply_kernels``; ``as_dict()`` is the JSON form."""

    job: str
    log: str
    target: str
    runs_here: bool
    tasks: list[AppliedTask] = field(default_factory=list)
    device: str | None = None  #: what ran the kernels (None: they were only built)
    load: MachineLoad | None = None  #: the load average around the timing (kernels run here)

    @property
    def notes(self) -> list[str]:
        """Every note of the report: the machine's load, then each task's."""
        busy = self.load.note() if self.load is not None else None
        return ([busy] if busy else []) + [note for t in self.tasks for note in t.notes]

    @property
    def ok(self) -> bool:
        """False when a kernel gave a wrong answer or failed to build or run."""
        return all(t.correct is not False and t.error is None for t in self.tasks)

    def as_dict(self) -> dict[str, JsonValue]:
        """Return a JSON-serialisable dict."""
        return {"job": self.job, "log": self.log, "target": self.target, "runs_here": self.runs_here,
                "device": self.device, "ok": self.ok, "notes": self.notes,
                "load": asdict(self.load) if self.load is not None else None,
                "tasks": [dict(asdict(t), gflops=t.gflops, vs_log=t.vs_log, **t.fastest())
                          for t in self.tasks]}


def apply_kernels(job: Job, log: str, export: str | None = None,
                  on_step: Callable[[str], None] | None = None) -> ApplyReport:
    """Build every task of a job with the best config of ``log``; check, benchmark, export.

    Parameters
    ----------
    job : Job
    log : str
        Tuning log(s) holding the best configs.
    export : str, optional
        Directory to write ``<stem>.{o,ll,s}`` of the tuned kernels into (``kernel_stem``).
    on_step : callable, optional
        Told each task as it starts being built, checked and timed (``"task 2/12 (<template>) ..."``).

    Returns
    -------
    ApplyReport

    Raises
    ------
    JobError
        For an invalid task.
    RecordError
        When the log does not exist.
    RPCError, TargetError
        When the job measures through RPC and no device of its key can run its kernels.
    """
    check_log_file(log)
    if export is not None:
        check_export(export, directory=True)
    tasks = create_tasks(job)  # every task checked before anything is built; problems reported together
    records = [(r.inp, r.result) for r in plausible(read_log(log))]
    history = ApplyHistoryBest(records)
    target = tasks[0].target
    device: ApplyDevice | None = None
    numpy_worker: Worker | None = None
    exported = ExportDirectory(export) if export is not None else None
    try:
        with single_blas_thread():  # the float64 references: no BLAS threads spinning while kernels run
            device = open_apply_device(job, target)
            if device is not None and device.worker is not None:
                numpy_worker = Worker(preload=(BASELINE_FUNC.partition(":")[0],), name="tunecli-numpy")
            report = ApplyReport(job.name, log, str(target), target.is_host,
                                 device=None if device is None else device.where)
            window = LoadWindow()
            for index, task in enumerate(tasks):
                if on_step is not None:
                    on_step(f"task {index + 1}/{len(tasks)} ({task.name}): building, checking, timing")
                report.tasks.append(_apply_task(job, index, task, history, exported, device, numpy_worker))
            if device is not None and device.worker is not None:  # timed on this machine
                report.load = window.finish()
            for t in report.tasks:
                t.uncertain = t.tuned_stats is not None and median_uncertain(
                    report.load, t.tuned_stats, t.default_stats, t.numpy_stats)
        if exported is not None:
            exported.finish()
    finally:
        if exported is not None:
            exported.discard()
        if device is not None:
            device.close()
        if numpy_worker is not None:
            numpy_worker.close()
    return report


def _apply_task(job: Job, index: int, task: Task, history: ApplyHistoryBest, export: ExportDirectory | None,
                device: ApplyDevice | None, numpy_worker: Worker | None = None) -> AppliedTask:
    with history:
        config = history.query(task.target, task.workload)
    out = AppliedTask(index, task_label(task), float(task.flop or 0), config_text(config),
                      bool(getattr(config, "is_fallback", False)))
    if config_source(config).kind == "log" and config.cost is not None:  # not a package's or nearest
        out.log_time = float(config.cost)
    stem = kernel_stem(job.name, index, task)
    try:
        tuned, outputs = _build(task, config, stem)
    except Exception as err:  # noqa: BLE001 - a config that does not build is this task's error
        out.error = f"the config does not build: {type(err).__name__}: {err}"
        return out
    if export is not None:
        out.files = _export(tuned, export, stem)
    if device is None:
        return out
    specs = normalize_arg_specs(tuned.arg_specs)
    check = job.runner.timing.with_values(number=1, repeat=1, min_repeat_ms=0, warmup_ms=0)
    tuned_run = _measure(device, tuned, specs, outputs, check)
    if tuned_run.error_no:
        out.error = f"{MeasureErrorNo(tuned_run.error_no).name}: {tuned_run.error}"
        return out
    try:
        untuned = _untuned(task)
        out.default_source, out.default_config = config_source(untuned).kind, config_text(untuned)
        default: Module | None = _build(task, untuned, stem + "_default")[0]
        default_run = _measure(device, default, specs, outputs, check)
    except Exception as err:  # noqa: BLE001 - reported like a kernel that fails
        default = None
        default_run = MeasureReply((), int(MeasureErrorNo.COMPILE_HOST), f"{type(err).__name__}: {err}")
    reference = task.reference  # built-in templates' numpy reference (see task.create)
    if reference is not None:
        inputs = [a for i, a in enumerate(random_arguments(specs, _SEED)) if i not in outputs]
        expected = reference(*inputs)
        expected = list(expected) if isinstance(expected, (tuple, list)) else [expected]
        out.checked_against = "numpy"
    elif default_run.error_no:
        out.error = (f"the untuned config, the reference of the check, failed: "
                     f"{MeasureErrorNo(default_run.error_no).name}: {default_run.error}")
        return out
    else:
        expected = _outputs(default_run, specs)
        out.checked_against = "default config" if out.default_source == "default" else "untuned config"
    out.correct, out.max_error = matches_reference(_outputs(tuned_run, specs), expected)
    baseline = baseline_of(task)
    contenders: dict[str, Contender] = {
        "tuned": lambda timing: _measure(device, tuned, specs, outputs, timing)}
    same = out.config == out.default_config or config_source(config).kind != "log"
    if default is not None and not default_run.error_no and not same:
        contenders["default"] = lambda timing: _measure(device, default, specs, outputs, timing)
    worker = numpy_worker
    if baseline is not None and worker is not None:
        out.numpy_baseline = f"{_dtype_of(specs, outputs)} {baseline.text}, {get_num_threads()} threads"
        request = BaselineRequest(baseline, specs, tuple(outputs), _SEED, job.runner.timing)
        contenders["numpy"] = lambda timing: _time_baseline(worker, replace(request, timing=timing))
    times = time_interleaved(contenders, job.runner.timing)
    if times["tuned"].error_no:
        out.error = f"{MeasureErrorNo(times['tuned'].error_no).name}: {times['tuned'].error}"
        return out
    if same and default is not None and not default_run.error_no:
        times["default"] = times["tuned"]
    out.tuned, out.default, out.numpy = (median_seconds(times.get(n)) for n in ("tuned", "default", "numpy"))
    _judge(out, *(time_stats(times.get(n)) for n in ("tuned", "default", "numpy")), same)
    return out


def _untuned(task: Task) -> ConfigSpace:
    """The config an untuned build of ``task`` runs (its ``config_source`` says where it came from)."""
    with task.target:
        return untuned_answer(task.target, task.workload)


def _judge(out: AppliedTask, tuned: TimeStats | None, default: TimeStats | None,
           numpy: TimeStats | None, same: bool = False) -> None:
    """Keep the rounds' statistics and note what makes the task's times doubtful (``same``: the tuned
    config is the untuned one, timed once)."""
    out.tuned_stats, out.default_stats, out.numpy_stats = tuned, default, numpy
    name = f"task {out.index}"
    untuned = f"untuned config ({out.default_source})" if out.default_source else "untuned config"
    notes = [rounds_note(name, {"tuned": tuned, untuned: None if same else default, "numpy": numpy}),
             compare_with_log(name, out.tuned, out.log_time),
             None if same else slower_than_untuned(name, tuned, default, "untuned")]
    out.notes = [note for note in notes if note]


def _time_baseline(worker: Worker, request: BaselineRequest) -> MeasureReply:
    outcome = worker.call(BASELINE_FUNC, request, request.timing.timeout)
    if outcome.status is CallStatus.OK:
        return outcome.value
    return MeasureReply((), int(MeasureErrorNo.UNKNOWN_ERROR), outcome.detail)


def _dtype_of(specs: tuple[ArgSpecT, ...], outputs: list[int]) -> str:
    return str(specs[outputs[0]][1]) if outputs else str(specs[-1][1])


def _measure(device: ApplyDevice, module: Module, specs: tuple[ArgSpecT, ...], outputs: list[int],
             timing: TimingOptions) -> MeasureReply:
    """Run ``module`` once (sending its outputs back) and time it on ``device``, as tuning does."""
    request = MeasureRequest(module.object_bytes(), module.entry_name, specs, timing=timing,
                             seed=_SEED, output_indices=tuple(outputs), return_outputs=True)
    try:
        return device.measure(request)
    except RPCError as err:  # the device was lost: this task's error
        return MeasureReply((), int(MeasureErrorNo.RUNTIME_DEVICE), str(err))


def _outputs(reply: MeasureReply, specs: tuple[ArgSpecT, ...]) -> list[np.ndarray]:
    """The output arrays a reply sent back, in argument order."""
    return [np.frombuffer(raw, dtype=specs[i][1]).reshape(specs[i][0]) for i, raw in reply.outputs]


def _build(task: Task, config: ConfigEntity, name: str) -> tuple[Module, list[int]]:
    """Build ``config`` of ``task``; return the module and the indices of its output arguments."""
    with task.target:
        sch, args = task.instantiate(config)
    module = build(sch, args, target=task.target, name=name)
    return module, list(output_arguments(sch, args, module.arg_specs))


def kernel_stem(job: str, index: int, task: Task) -> str:
    """The symbol and file stem of a job's kernel: ``<job>_<task index>_<template>_<workload hash>``.

    Kernels of two jobs (or of one template with other arguments) linked into one program do
    not collide; the hash is of the workload, so a kernel keeps its name from run to run.

    Parameters
    ----------
    job : str
        The job's name.
    index : int
        The task's index in the job.
    task : Task

    Returns
    -------
    str
        A C identifier.
    """
    digest = hashlib.sha1(repr(task.workload).encode()).hexdigest()[:8]
    stem = re.sub(r"[^A-Za-z0-9_]+", "_", f"{job}_task{index}_{task.name}").strip("_")
    return f"{'k_' if stem[:1].isdigit() else ''}{stem}_{digest}"


def _export(module: Module, export: ExportDirectory, stem: str) -> list[str]:
    """Write the kernel's files into the export's temporary directory (the object's blob beside it,
    for ``cc.create_shared``); return their final paths."""
    files = []
    for suffix in (".o", ".ll", ".s"):
        module.save(export.folder / (stem + suffix))
        files.append(export.final(stem + suffix))
        if (export.folder / (stem + suffix + OBJECT_BLOB_SUFFIX)).exists():
            files.append(export.final(stem + suffix + OBJECT_BLOB_SUFFIX))
    return files
