"""The YAML job schema: what a job file may say, validated before anything runs.

A job names the tasks to tune, the tuner and how to measure::

    name: quickstart                  # required; also names the default log logs/<name>.log
    target: llvm                      # TVM target string (default "llvm")
    log: logs/quickstart.log          # optional
    tasks:                            # required, at least one
      - template: dense.x86           # a built-in template, or "path/to/file.py:function"
        args: {N: 256, K: 256, M: 256}   # by parameter name, or a list in order
    tuner:
      kind: xgb                       # a registered tuner (engine/tuner/tuner_kinds.py)
      n_trial: 32                     # total trials per task (resumed runs count the log)
      early_stopping: 16              # optional
      seed: 0                         # optional
      plan_size: 16                   # the tuner kind's own options (TVM's names)
    measure:
      builder: {timeout: 10, n_parallel: 2}
      runner: {kind: local, number: 4, repeat: 3, min_repeat_ms: 0, timeout: 10,
               enable_cpu_cache_flush: false, check_correctness: false,
               warmup_ms: 50, cooldown_interval: 0}
      # a registered runner kind (engine/job/runner_kinds.py): its TimingOptions settings and
      # its own options (rpc: key, tracker "HOST:PORT", priority instead of check_correctness)

Every error names the file, the line and the field (``jobs/bad.yaml:7: tuner.n_trial:
expected an integer, got 'many'``).  Relative paths (``log``, template files) are relative to
the current directory.  Templates and arguments are checked by ``tasks.create_tasks``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from tunecli.engine.codegen.compile import target_problem
from tunecli.engine.job.nodes import Node, load_document
from tunecli.engine.job.runner_kinds import RUNNERS
from tunecli.engine.measure.timing_options import TIMING_OPTIONS, TimingOptions
from tunecli.engine.option import Option
from tunecli.engine.target import Target, as_target
from tunecli.engine.tuner.tuner_kinds import TUNERS
from tunecli.errors import TargetError

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
#: Fields of ``tuner`` every tuner kind takes; the rest are the kind's own options.
_TUNER_FIELDS = ("kind", "n_trial", "early_stopping", "seed")


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
    """

    template: str
    args: list | dict
    node: Node = field(compare=False, repr=False)


@dataclass(frozen=True)
class TunerSpec:
    """The ``tuner`` section."""

    kind: str
    n_trial: int
    early_stopping: int | None = None
    seed: int | None = None
    options: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class BuilderSpec:
    """The ``measure.builder`` section (TVM's ``LocalBuilder`` options)."""

    timeout: float = 10.0
    n_parallel: int | None = None


@dataclass(frozen=True)
class RunnerSpec:
    """The ``measure.runner`` section.

    Attributes
    ----------
    kind : str
        A registered runner kind (:data:`tunecli.engine.job.runner_kinds.RUNNERS`).
    timing : TimingOptions
        How kernels are timed (TVM's ``LocalRunner``/``RPCRunner`` settings).
    options : dict
        The kind's own options (rpc: ``key``, ``tracker`` as ``(host, port)``, ``priority``).
    """

    kind: str = "local"
    timing: TimingOptions = TimingOptions()
    options: dict[str, Any] = field(default_factory=dict)


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
    tuner : TunerSpec
    builder : BuilderSpec
    runner : RunnerSpec
    """

    path: str
    name: str
    target: Target
    log: str
    tasks: tuple[TaskSpec, ...]
    tuner: TunerSpec
    builder: BuilderSpec
    runner: RunnerSpec

    def with_overrides(self, n_trial: int | None = None, tuner: str | None = None,
                       log: str | None = None, seed: int | None = None) -> Job:
        """Return this job with command-line overrides applied.

        Changing the tuner kind drops the kind-specific options of the job's tuner.
        """
        spec = self.tuner
        if tuner is not None and tuner != spec.kind:
            spec = replace(spec, kind=tuner, options={})
        if n_trial is not None:
            spec = replace(spec, n_trial=n_trial)
        if seed is not None:
            spec = replace(spec, seed=seed)
        return replace(self, tuner=spec, log=log if log is not None else self.log)


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
        Naming the file, line and field of the first problem found.
    """
    root = load_document(path)
    top = root.items(("name", "target", "log", "tasks", "tuner", "measure"))
    for required in ("name", "tasks", "tuner"):
        if required not in top:
            raise root.error(f"missing required field '{required}'")
    name = top["name"].as_str()
    if not _NAME.match(name):
        raise top["name"].error(f"expected a name made of letters, digits, '_', '.', '-', got {name!r}")
    target = _target(top["target"]) if "target" in top else as_target("llvm")
    log = top["log"].as_str() if "log" in top else str(Path("logs") / f"{name}.log")
    measure = top["measure"].items(("builder", "runner")) if "measure" in top else {}
    runner = _runner(measure["runner"]) if "runner" in measure else RunnerSpec()
    if runner.kind == "local" and not target.is_host:
        raise top["target"].error(f"code for {str(target)!r} cannot run on this machine: measure it on a "
                                  "device with `runner: {kind: rpc, key: ..., tracker: HOST:PORT}`")
    return Job(
        path=str(path), name=name, target=target, log=log,
        tasks=_tasks(top["tasks"]),
        tuner=_tuner(top["tuner"]),
        builder=_builder(measure["builder"]) if "builder" in measure else BuilderSpec(),
        runner=runner,
    )


def _target(n: Node) -> Target:
    text = n.as_str()
    try:
        target = as_target(text)
    except TargetError as err:
        raise n.error(str(err)) from None
    if target.kind != "llvm":
        raise n.error(f"tunecli compiles for llvm targets only, got {text!r}")
    problem = target_problem(target)
    if problem:
        raise n.error(f"LLVM cannot compile for {text!r}: {problem}")
    return target


def _tasks(n: Node) -> tuple[TaskSpec, ...]:
    specs = []
    for entry in n.elements():
        fields = entry.items(("template", "args"))
        if "template" not in fields:
            raise entry.error("missing required field 'template'")
        args: list | dict = []
        if "args" in fields:
            a = fields["args"]
            if a.is_mapping():
                args = {key: _arg(value) for key, value in a.items().items()}
            elif a.is_list():
                args = [_arg(value) for value in a.elements()]
            else:
                raise a.error(f"expected a mapping or a list, got {a.describe()}")
        specs.append(TaskSpec(fields["template"].as_str(), args, entry))
    if not specs:
        raise n.error("expected at least one task")
    return tuple(specs)


def _arg(n: Node) -> Any:
    """A template argument: a number, a string, or a (nested) list of them."""
    if n.is_list():
        return [_arg(e) for e in n.elements()]
    if n.is_mapping() or n.is_null():
        raise n.error(f"expected a number, a string or a list, got {n.describe()}")
    return n.value()


def _option(opt: Option, n: Node) -> Any:
    """The value of ``n`` as the setting ``opt`` (its type from YAML, its range from ``opt``)."""
    readers = {int: Node.as_int, float: Node.as_float, bool: Node.as_bool, str: Node.as_str}
    value = readers[opt.type](n)
    try:
        return opt.parse(value)
    except ValueError as err:
        raise n.error(str(err)) from None


def _tuner(n: Node) -> TunerSpec:
    raw = n.items()
    for required in ("kind", "n_trial"):
        if required not in raw:
            raise n.error(f"missing required field '{required}'")
    kind = TUNERS[raw["kind"].as_choice(tuple(TUNERS))]
    fields = n.items(_TUNER_FIELDS + tuple(opt.name for opt in kind.options))
    early = fields.get("early_stopping")
    seed = fields.get("seed")
    options = {k: _option(kind.option(k), v) for k, v in fields.items() if k not in _TUNER_FIELDS}
    problem = kind.check(options) if kind.check is not None else None
    if problem:
        raise fields[problem[0]].error(problem[1])
    return TunerSpec(
        kind=kind.name,
        n_trial=fields["n_trial"].as_int(minimum=1),
        early_stopping=None if early is None or early.is_null() else early.as_int(minimum=1),
        seed=None if seed is None or seed.is_null() else seed.as_int(minimum=0),
        options=options,
    )


def _builder(n: Node) -> BuilderSpec:
    fields = n.items(("timeout", "n_parallel"))
    spec = BuilderSpec()
    if "timeout" in fields:
        spec = replace(spec, timeout=fields["timeout"].as_float(positive=True))
    if "n_parallel" in fields:
        spec = replace(spec, n_parallel=fields["n_parallel"].as_int(minimum=1))
    return spec


def _runner(n: Node) -> RunnerSpec:
    raw = n.items()
    kind = RUNNERS[raw["kind"].as_choice(tuple(RUNNERS)) if "kind" in raw else "local"]
    settings = [opt for opt in TIMING_OPTIONS if opt.name in kind.timing] + list(kind.options)
    fields = n.items(("kind", *(opt.name for opt in settings)))
    for opt in kind.options:
        if opt.required and opt.name not in fields:
            raise n.error(f"missing required field '{opt.name}' (runner kind {kind.name})")
    values = {opt.name: _option(opt, fields[opt.name]) for opt in settings if opt.name in fields}
    timing = TimingOptions(**{k: v for k, v in values.items() if k in kind.timing})
    options = {k: v for k, v in values.items() if k not in kind.timing}
    return RunnerSpec(kind=kind.name, timing=timing, options=options)
