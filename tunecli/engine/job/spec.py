"""The YAML job schema: what a job file may say, validated before anything runs.

A job names the tasks to tune, the tuner and how to measure::

    name: quickstart                  # required; also names the default log logs/<name>.log
    target: llvm                      # TVM target string (default "llvm")
    log: logs/quickstart.log          # optional
    tasks:                            # required, at least one
      - template: dense.x86           # a built-in template, or "path/to/file.py:function"
        args: {N: 256, K: 256, M: 256}   # by parameter name, or a list in order
    tuner:
      kind: xgb                       # random | gridsearch | ga | xgb
      n_trial: 32                     # total trials per task (resumed runs count the log)
      early_stopping: 16              # optional
      seed: 0                         # optional
      plan_size: 16                   # kind-specific options, see TUNER_OPTIONS
    measure:
      builder: {timeout: 10, n_parallel: 2}
      runner: {kind: local, number: 4, repeat: 3, min_repeat_ms: 0, timeout: 10,
               enable_cpu_cache_flush: false, check_correctness: false,
               warmup_ms: 50, cooldown_interval: 0}
      # runner kind rpc takes key, tracker "HOST:PORT", priority instead of check_correctness

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
from tunecli.engine.measure.timing import WARMUP_MS
from tunecli.engine.target import Target, as_target
from tunecli.errors import TargetError

TUNER_KINDS = ("random", "gridsearch", "ga", "xgb")
RUNNER_KINDS = ("local", "rpc")

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")


def _pos_int(n: Node) -> int:
    return n.as_int(minimum=1)


def _nonneg_float(n: Node) -> float:
    return n.as_float(minimum=0)


def _ratio(n: Node) -> float:
    value = n.as_float(minimum=0)
    if value > 1:
        raise n.error(f"expected a number between 0 and 1, got {n.node.value}")
    return value


#: Options each tuner kind accepts besides kind/n_trial/early_stopping/seed (TVM's names).
TUNER_OPTIONS: dict[str, dict[str, Any]] = {
    "random": {},
    "gridsearch": {},
    "ga": {"pop_size": _pos_int, "elite_num": _pos_int, "mutation_prob": _ratio},
    "xgb": {
        "plan_size": _pos_int,
        "feature_type": lambda n: n.as_choice(("itervar", "knob", "curve")),
        "loss_type": lambda n: n.as_choice(("reg", "rank", "rank-binary")),
        "num_threads": _pos_int,
        "diversity_filter_ratio": lambda n: n.as_float(minimum=1),
        "log_interval": _pos_int,
        "rerank_factor": _pos_int,
    },
}


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
    """The ``measure.runner`` section (TVM's ``LocalRunner``/``RPCRunner`` options)."""

    kind: str = "local"
    number: int = 4
    repeat: int = 3
    min_repeat_ms: float = 0.0
    timeout: float = 10.0
    enable_cpu_cache_flush: bool = False
    warmup_ms: float = WARMUP_MS
    cooldown_interval: float = 0.0
    check_correctness: bool = False
    key: str | None = None
    tracker: tuple[str, int] | None = None
    priority: int = 1


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


def _tuner(n: Node) -> TunerSpec:
    common = ("kind", "n_trial", "early_stopping", "seed")
    raw = n.items()
    for required in ("kind", "n_trial"):
        if required not in raw:
            raise n.error(f"missing required field '{required}'")
    kind = raw["kind"].as_choice(TUNER_KINDS)
    allowed = common + tuple(TUNER_OPTIONS[kind])
    fields = n.items(allowed)
    early = fields.get("early_stopping")
    seed = fields.get("seed")
    options = {k: TUNER_OPTIONS[kind][k](v) for k, v in fields.items() if k not in common}
    if options.get("elite_num", 3) > options.get("pop_size", 100):
        where = fields.get("elite_num") or fields["pop_size"]
        raise where.error(f"elite_num ({options.get('elite_num', 3)}) must not exceed pop_size "
                          f"({options.get('pop_size', 100)})")
    return TunerSpec(
        kind=kind,
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


_RUNNER_FIELDS: dict[str, Any] = {
    "number": _pos_int,
    "repeat": _pos_int,
    "min_repeat_ms": _nonneg_float,
    "timeout": lambda n: n.as_float(positive=True),
    "enable_cpu_cache_flush": Node.as_bool,
    "warmup_ms": _nonneg_float,
    "cooldown_interval": _nonneg_float,
}
_LOCAL_FIELDS: dict[str, Any] = {"check_correctness": Node.as_bool}
_RPC_FIELDS: dict[str, Any] = {
    "key": Node.as_str,
    "tracker": lambda n: _host_port(n),
    "priority": Node.as_int,
}


def _runner(n: Node) -> RunnerSpec:
    raw = n.items()
    kind = raw["kind"].as_choice(RUNNER_KINDS) if "kind" in raw else "local"
    parsers = dict(_RUNNER_FIELDS, **(_RPC_FIELDS if kind == "rpc" else _LOCAL_FIELDS))
    fields = n.items(("kind", *parsers))
    if kind == "rpc":
        for required in ("key", "tracker"):
            if required not in fields:
                raise n.error(f"missing required field '{required}' (runner kind rpc)")
    values = {k: parsers[k](v) for k, v in fields.items() if k != "kind"}
    return RunnerSpec(kind=kind, **values)


def _host_port(n: Node) -> tuple[str, int]:
    """Parse ``"HOST:PORT"``."""
    text = n.as_str()
    try:
        return parse_host_port(text)
    except ValueError as err:
        raise n.error(str(err)) from None


def parse_host_port(text: str) -> tuple[str, int]:
    """Split ``"HOST:PORT"`` into its parts.

    Parameters
    ----------
    text : str

    Returns
    -------
    tuple of (str, int)

    Raises
    ------
    ValueError
        When the text is not of the form HOST:PORT with a port in 1..65535.
    """
    host, sep, port = text.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"expected HOST:PORT (e.g. 127.0.0.1:9190), got {text!r}")
    return host, int(port)
