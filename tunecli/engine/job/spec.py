"""The YAML job schema: what a job file may say, validated before anything runs.

A job names the tasks to tune, the tuner and how to measure::

    name: quickstart                  # required; also names the default log logs/<name>.log
    target: llvm                      # TVM target string (default "llvm")
    log: logs/quickstart.log          # optional
    tasks:                            # at least one (or a model, see model_spec)
      - template: dense.x86           # a built-in template, or "path/to/file.py:function"
        args: {N: 256, K: 256, M: 256}   # by parameter name, or a list in order
        weight: 1                     # optional: occurrences in the network (with budget)
    tuner:                            # optional: xgb, DEFAULT_N_TRIAL trials per task (tuning_spec)
      kind: xgb                       # a registered tuner (engine/tuner/tuner_kinds.py)
      n_trial: 32                     # total trials per task (resumed runs count the log)
      # or budget: 96                 # total trials for all tasks, spent by a task scheduler
      # task_scheduler: gradient      # with budget: gradient (default) or round-robin (SCHEDULER_POLICIES)
      early_stopping: 16              # optional
      seed: 0                         # optional
      remeasure: 8                    # optional: measure each task's 8 best configs again (default 0)
      rematch: true                   # optional: the untuned config and what beats it, again in turns
      plan_size: 16                   # the tuner kind's own options (TVM's names)
    measure:
      builder: {timeout: 10, n_parallel: 2}   # n_parallel: at most 4 x the cores of this machine
      runner: {kind: local, number: 4, repeat: 3, min_repeat_ms: 0, timeout: 10,
               enable_cpu_cache_flush: false, check_correctness: false,
               warmup_ms: 50, cooldown_interval: 0}
      # a registered runner kind (engine/job/runner_kinds.py): its TimingOptions settings and
      # its own options (rpc: key, tracker "HOST:PORT", priority instead of check_correctness)
    cluster: {kind: ray, address: auto}   # optional: build and time on a cluster (cluster_spec)

A model job names a network (``model:``, with optional ``ops:`` and ``graph_tuner:``; see
``model_spec``) whose tasks are extracted and tuned, besides any ``tasks``.  A ``tasks`` entry
whose workload the network calls too is tuned once, weighted by the network's call count plus
the entry's ``weight`` (its occurrences outside the network).

Every error names the file, the line and the field (``jobs/bad.yaml:7: tuner.n_trial:
expected an integer, got 'many'``); ``load_job`` reports every problem of a file at once.
Relative paths (``log``, template files) are relative to the current directory.  Templates and
arguments are checked by ``tasks.create_tasks``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TypeAlias

from tunecli.engine.codegen.backend_table import BACKENDS
from tunecli.engine.codegen.compile import target_problem
from tunecli.engine.codegen.nvptx_backend import sm_arch
from tunecli.engine.job.cluster_spec import ClusterSpec, cluster_problems, read_cluster, with_address
from tunecli.engine.job.model_spec import (
    DEFAULT_OPS,
    GraphTunerSpec,
    ModelSpec,
    read_graph_tuner,
    read_model,
    read_ops,
)
from tunecli.engine.job.nodes import Node
from tunecli.engine.job.tasks import check_task_specs
from tunecli.engine.job.tuning_spec import BuilderSpec, RunnerSpec, TunerSpec, read_measure, read_tuner
from tunecli.engine.job.yaml_document import load_document
from tunecli.engine.log.log_files import log_problem
from tunecli.engine.target import Target, as_target, host_cpu, host_features, host_triple, triple_arch
from tunecli.engine.tuner.task_scheduler import budget_problem
from tunecli.errors import JobError, TargetError

#: A template argument as a job gives it: a number, a string, or a (nested) list of them.
TemplateArg: TypeAlias = "int | float | str | list[TemplateArg]"

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
#: Longest job name (it names the default log file).
MAX_NAME = 128


@dataclass(frozen=True)
class TaskSpec:
    """One entry of ``tasks``: a template and its arguments, with where they were written.

    Attributes
    ----------
    template : str
        A built-in template name or ``"path/to/file.py:function"``.
    args : list or dict
        Positional arguments, or arguments by parameter name.
    node : Node
        The task's YAML node (for error messages during task creation).
    weight : float
        How often the task occurs (its share of the objective of a budgeted run).
    """

    template: str
    args: list | dict
    node: Node = field(compare=False, repr=False)
    weight: float = 1.0


@dataclass(frozen=True)
class Job:
    """A validated job file.

    Attributes
    ----------
    path : str
        The job file as named on the command line.
    name, log : str
        ``log`` is the resolved log path (``logs/<name>.log`` when not given).
    target : Target
        Parsed once here; the object travels to tasks, measure inputs and workers.
    tasks : tuple of TaskSpec
        Empty in a model job without extra tasks.
    tuner : TunerSpec
    builder : BuilderSpec
    runner : RunnerSpec
    model : ModelSpec or None
        The network of a model job.
    ops : tuple of str
        The operators whose calls in ``model`` become tasks.
    graph_tuner : GraphTunerSpec or None
    cluster : ClusterSpec or None
        Where configs are built and timed when not on this machine.
    """

    path: str
    name: str
    target: Target
    log: str
    tasks: tuple[TaskSpec, ...]
    tuner: TunerSpec
    builder: BuilderSpec
    runner: RunnerSpec
    model: ModelSpec | None = None
    ops: tuple[str, ...] = DEFAULT_OPS
    graph_tuner: GraphTunerSpec | None = None
    cluster: ClusterSpec | None = None

    def with_overrides(self, n_trial: int | None = None, tuner: str | None = None,
                       log: str | None = None, seed: int | None = None,
                       remeasure: int | None = None, cluster: str | None = None) -> Job:
        """Return this job with command-line overrides applied.

        Changing the tuner kind drops the kind-specific options of the job's tuner; ``n_trial``
        (trials per task) replaces a job's ``budget``; ``remeasure`` replaces ``tuner.remeasure``;
        ``cluster`` (an address) gives or replaces ``cluster.address``.
        """
        if log is not None and log != self.log:
            problem = log_problem(log)
            if problem:
                raise JobError(f"{log}: {problem}")
        spec = self.tuner
        if tuner is not None and tuner != spec.kind:
            spec = replace(spec, kind=tuner, options={})
        if n_trial is not None:
            spec = replace(spec, n_trial=n_trial, budget=None, task_scheduler=None)
        if seed is not None:
            spec = replace(spec, seed=seed)
        if remeasure is not None:
            spec = replace(spec, remeasure=remeasure)
        try:
            spec_cluster = with_address(self.cluster, cluster)
        except ValueError as err:
            raise JobError(f"{cluster}: {err}") from None
        return replace(self, tuner=spec, log=log if log is not None else self.log, cluster=spec_cluster)


def load_job(path: str | Path) -> Job:
    """Read and validate a job file.

    Parameters
    ----------
    path : str or Path

    Returns
    -------
    Job

    Raises
    ------
    JobError
        Listing every problem found, each naming the file, line and field.
    """
    root = load_document(path)
    problems = root.problems
    fields = ("name", "target", "log", "tasks", "model", "ops", "graph_tuner", "tuner", "measure", "cluster")
    top = problems.collect(lambda: root.items(fields), {})
    if "name" not in top and root.is_mapping():
        root.report("missing required field 'name'")
    if "tasks" not in top and "model" not in top and root.is_mapping():
        root.report("missing required field 'tasks' (or 'model', a network to tune)")
    for extra in ("ops", "graph_tuner"):
        if extra in top and "model" not in top:
            top[extra].report("applies to model jobs: give a model too")

    readers: dict[str, Callable[[Node], object]] = {
        "name": _name, "target": _target, "log": Node.as_str, "tasks": _tasks, "tuner": read_tuner,
        "measure": lambda node: read_measure(node, on_cluster="cluster" in top), "model": read_model,
        "ops": read_ops, "graph_tuner": read_graph_tuner, "cluster": read_cluster}
    # in the order of the file, so that the problems are listed in it
    values = {key: problems.collect(lambda key=key: readers[key](top[key]), None) for key in top}
    name, target, log = values.get("name"), values.get("target", as_target("llvm")), values.get("log")
    if "log" not in top and name is not None:
        log = str(Path("logs") / f"{name}.log")
    if log is not None:
        _check_log(top.get("log") or top["name"], log, given="log" in top)
    builder, runner = values.get("measure", (BuilderSpec(), RunnerSpec())) or (None, None)
    tuner, tasks = values.get("tuner", TunerSpec()), values.get("tasks", ())
    graph_tuner = values.get("graph_tuner")
    if graph_tuner is not None and target is not None and triple_arch(target.llvm_triple) != "x86_64":
        top["graph_tuner"].report(f"the graph tuner chooses among x86 NCHWc layouts; {str(target)!r} is "
                                  "not an x86 target")
    budget = budget_problem(tuner.budget, len(tasks or ())) if tuner is not None else None
    if budget:
        top["tuner"].report(budget)
    if "cluster" in top:
        cluster_problems(top["cluster"], target, runner.kind if runner is not None else None,
                         graph_tuner="graph_tuner" in top)
    elif runner is not None and target is not None and runner.kind == "local" \
            and not target.is_gpu and not target.is_host:
        top["target"].report(f"code for {str(target)!r} cannot run on this machine{_lacking(target)}: "
                             "measure it on a device with "
                             "`runner: {kind: rpc, key: ..., tracker: HOST:PORT}`")
    if problems and tasks and target is not None:  # the tasks' problems listed with the rest
        check_task_specs(tasks, target, problems)
    problems.raise_any()
    return Job(path=str(path), name=name, target=target, log=log, tasks=tasks, tuner=tuner,
               builder=builder, runner=runner, model=values.get("model"), ops=values.get("ops", DEFAULT_OPS),
               graph_tuner=graph_tuner, cluster=values.get("cluster"))


def _lacking(target: Target) -> str:
    """What this machine lacks to run code for ``target``, as a clause ("" for another architecture)."""
    if triple_arch(target.llvm_triple) != triple_arch(host_triple()):
        return ""
    missing = target.missing_on(host_cpu(), host_features().split(","))
    return f" (its CPU lacks {', '.join(missing)})" if missing else ""


def _check_log(where: Node, log: str, given: bool) -> None:
    problem = log_problem(log)
    if problem:
        where.report(f"{log}: {problem}" if given else f"the default log {log}: {problem}")


def _name(n: Node) -> str:
    name = n.as_str()
    if not _NAME.match(name):
        raise n.error(f"expected a name made of letters, digits, '_', '.', '-', got {n.describe()}")
    if len(name) > MAX_NAME:
        raise n.error(f"expected a name of at most {MAX_NAME} characters (it names the log file), "
                      f"got {len(name)}")
    return name


def _target(n: Node) -> Target:
    text = n.as_str()
    try:
        target = as_target(text)
    except TargetError as err:
        raise n.error(str(err)) from None
    if target.kind not in BACKENDS:
        raise n.error(f"tunecli compiles for {', '.join(BACKENDS)} targets only, got {text!r}")
    if target.is_gpu:
        try:
            sm_arch(target)
        except TargetError as err:
            raise n.error(str(err)) from None
        return target
    problem = target_problem(target)
    if problem:
        raise n.error(f"LLVM cannot compile for {text!r}: {problem}")
    return target


def _tasks(n: Node) -> tuple[TaskSpec, ...]:
    specs = []
    for entry in n.elements():
        spec = n.problems.collect(lambda entry=entry: _task(entry), None)
        if spec is not None:
            specs.append(spec)
    if not n.node.value:
        raise n.error("expected at least one task")
    return tuple(specs)


def _task(entry: Node) -> TaskSpec:
    fields = entry.items(("template", "args", "weight"))
    if "template" not in fields:
        entry.report("missing required field 'template'")
    args = entry.problems.collect(lambda: _args(fields["args"]), None) if "args" in fields else []
    weight = entry.problems.collect(lambda: fields["weight"].as_float(positive=True), 1.0) \
        if "weight" in fields else 1.0
    template = entry.problems.collect(lambda: fields["template"].as_str(), "") if "template" in fields else ""
    if args is None:
        raise JobError()  # its problems are reported (every field's): no task to check further
    return TaskSpec(template, args, entry, weight)


def _args(a: Node) -> list | dict:
    if a.is_mapping():
        return {key: _arg(value) for key, value in a.items().items()}
    if a.is_list():
        return [_arg(value) for value in a.elements()]
    raise a.error(f"expected a mapping or a list, got {a.describe()}")


def _arg(n: Node) -> TemplateArg:
    """A template argument: a number, a string, or a (nested) list of them."""
    if n.is_list():
        return [_arg(e) for e in n.elements()]
    if n.is_mapping() or n.is_null():
        raise n.error(f"expected a number, a string or a list, got {n.describe()}")
    if n.node.tag == "tag:yaml.org,2002:str":
        return n.as_str()
    value = n.value()
    if isinstance(value, float) and not math.isfinite(value):
        raise n.error(f"expected a finite number, got {n.node.value}")
    if not isinstance(value, (int, float, str)):  # a timestamp, binary data, a set
        raise n.error(f"expected a number, a string or a list, got {n.describe()}")
    return value
