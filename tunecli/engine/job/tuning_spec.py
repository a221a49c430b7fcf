"""The ``tuner`` and ``measure`` sections of a job: how it searches and how it measures.

``tuner`` names a registered tuner kind (``engine/tuner/tuner_kinds.py``) with its own options,
the trials per task (``n_trial``) or for all tasks (``budget``, spent by a task scheduler), and
how many of each task's best configs to measure again at its end (``remeasure``).
``measure`` gives the builder's settings and a registered runner kind
(``engine/job/runner_kinds.py``) with its timing settings and options. :mod:`.spec` reads the
rest of the job file and calls :func:`read_tuner` and :func:`read_measure`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace

from tunecli.engine.job.nodes import Node
from tunecli.engine.job.runner_kinds import RUNNERS, OptionValue, OptionValues
from tunecli.engine.measure.timing_options import MAX_SECONDS, TIMING_OPTIONS, TimingOptions
from tunecli.engine.option import Option
from tunecli.engine.tuner.task_scheduler import SCHEDULER_POLICIES
from tunecli.engine.tuner.tuner_kinds import TUNERS

#: The tuner of a job without a ``tuner`` section (as ``tvmc tune`` defaults to XGBoost).
DEFAULT_TUNER = "xgb"
#: Trials per task when the job does not say.
DEFAULT_N_TRIAL = 200
#: The task scheduler of a job with a ``budget`` that does not name one.
DEFAULT_TASK_SCHEDULER = "gradient"
#: Fields of ``tuner`` every tuner kind takes; the rest are the kind's own options.
_TUNER_FIELDS = ("kind", "n_trial", "early_stopping", "seed", "budget", "task_scheduler", "remeasure",
                 "rematch")
_BUILD_TIMEOUT = Option("timeout", float, 10.0, positive=True, maximum=MAX_SECONDS)


@dataclass(frozen=True)
class TunerSpec:
    """The ``tuner`` section (an XGBoost tuner with ``DEFAULT_N_TRIAL`` trials when absent).

    With ``budget`` (trials for all tasks together) a task scheduler (``task_scheduler``, a
    name in ``engine.tuner.task_scheduler.SCHEDULER_POLICIES``) spends it, and ``n_trial`` is unused.
    ``remeasure`` (K) measures each task's K best configs again once its tuning ends
    (``engine.tuner.remeasure``).  Off (0) by default: it costs K measurements per task and only
    changes the choice when other load inflated times during tuning.  ``rematch`` measures each
    task's untuned config and the config that beats it by more than the margin again, in turns,
    once its tuning ends (``engine.tuner.untuned.rematch_untuned``), so that a record timed in a
    quiet moment does not win over an untuned config timed in a busy one.  Off by default.
    """

    kind: str = DEFAULT_TUNER
    n_trial: int = DEFAULT_N_TRIAL
    budget: int | None = None
    task_scheduler: str | None = None
    early_stopping: int | None = None
    seed: int | None = None
    options: OptionValues = field(default_factory=dict)
    remeasure: int = 0
    rematch: bool = False


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
    options: OptionValues = field(default_factory=dict)


def read_tuner(n: Node) -> TunerSpec:
    """Read a ``tuner`` section; each bad field is reported (or raised) naming its line.

    Parameters
    ----------
    n : Node
        The section's node.

    Returns
    -------
    TunerSpec
    """
    raw = n.items()
    name = n.problems.collect(lambda: raw["kind"].as_choice(tuple(TUNERS)), None) if "kind" in raw \
        else DEFAULT_TUNER
    if name is None:  # an unknown kind (reported): the other fields are still checked
        known = tuple(dict.fromkeys(opt.name for k in TUNERS.values() for opt in k.options))
        kind, fields, options = TUNERS[DEFAULT_TUNER], n.items(_TUNER_FIELDS + known), {}
    else:
        kind = TUNERS[name]
        fields = n.items(_TUNER_FIELDS + tuple(opt.name for opt in kind.options))
        options = _options(list(kind.options), fields)
        if len(options) == len(fields) - len(set(fields) & set(_TUNER_FIELDS)):
            problem = kind.check(options) if kind.check is not None else None
            if problem:
                fields[problem[0]].report(problem[1])

    def number(key: str, minimum: int, default: int | None) -> int | None:
        value = fields.get(key)
        if value is None or (default is None and value.is_null()):
            return default
        return n.problems.collect(lambda: value.as_int(minimum=minimum), default)

    budget = number("budget", 1, None)
    policies = tuple(SCHEDULER_POLICIES)
    scheduler = n.problems.collect(lambda: fields["task_scheduler"].as_choice(policies), None) \
        if "task_scheduler" in fields else None
    if budget is not None and "n_trial" in fields:
        fields["n_trial"].report("give either n_trial (trials per task) or budget (trials for all tasks)")
    if scheduler is not None and "budget" not in fields:
        fields["task_scheduler"].report("a task scheduler spends a budget: give tuner.budget too")
    if budget is not None:
        scheduler = scheduler or DEFAULT_TASK_SCHEDULER
    return TunerSpec(kind=kind.name, n_trial=number("n_trial", 1, DEFAULT_N_TRIAL), budget=budget,
                     task_scheduler=scheduler, early_stopping=number("early_stopping", 1, None),
                     seed=number("seed", 0, None), options=options, remeasure=number("remeasure", 0, 0),
                     rematch=n.problems.collect(lambda: fields["rematch"].as_bool(), False)
                     if "rematch" in fields else False)


def read_measure(n: Node, on_cluster: bool = False) -> tuple[BuilderSpec | None, RunnerSpec | None]:
    """Read a ``measure`` section: its builder and runner (None where one has problems).

    Parameters
    ----------
    n : Node
        The section's node.
    on_cluster : bool
        The job has a ``cluster`` section: its builds run on the nodes, so ``builder.n_parallel``
        is not bounded by this machine's cores.

    Returns
    -------
    tuple of (BuilderSpec or None, RunnerSpec or None)
        The defaults for a subsection not given.
    """
    fields = n.items(("builder", "runner"))
    builder = n.problems.collect(lambda: _builder(fields["builder"], on_cluster), None) \
        if "builder" in fields else BuilderSpec()
    runner = n.problems.collect(lambda: _runner(fields["runner"]), None) if "runner" in fields \
        else RunnerSpec()
    return builder, runner


def max_builders() -> int:
    """The most configs ``measure.builder.n_parallel`` may build at once: 4 x this machine's cores."""
    return 4 * len(os.sched_getaffinity(0))


def _option(opt: Option, n: Node) -> OptionValue:
    """The value of ``n`` as the setting ``opt`` (its type from YAML, its range from ``opt``)."""
    readers = {int: Node.as_int, float: Node.as_float, bool: Node.as_bool, str: Node.as_str}
    value = readers[opt.type](n)
    try:
        return opt.parse(value)
    except ValueError as err:
        raise n.error(str(err)) from None


def _options(settings: list[Option], fields: dict[str, Node]) -> OptionValues:
    """The values of the ``settings`` given in ``fields``; each bad value is reported."""
    values = {}
    for opt in settings:
        if opt.name in fields:
            value = fields[opt.name].problems.collect(lambda opt=opt: _option(opt, fields[opt.name]), None)
            if value is not None:
                values[opt.name] = value
    return values


def _builder(n: Node, on_cluster: bool) -> BuilderSpec:
    fields = n.items(("timeout", "n_parallel"))
    spec = BuilderSpec()
    if "timeout" in fields:
        timeout = n.problems.collect(lambda: _option(_BUILD_TIMEOUT, fields["timeout"]), spec.timeout)
        spec = replace(spec, timeout=timeout)
    if "n_parallel" in fields:
        count = fields["n_parallel"]
        spec = replace(spec, n_parallel=n.problems.collect(lambda: _builders(count, on_cluster), None))
    return spec


def _builders(n: Node, on_cluster: bool) -> int:
    limit = max_builders()
    count = n.as_int(minimum=1)
    if count > limit and not on_cluster:  # a cluster's nodes build: their cores are theirs
        raise n.error(f"expected an integer between 1 and {limit} (4 x the {limit // 4} cores of this "
                      f"machine), got {count}")
    return count


def _runner(n: Node) -> RunnerSpec:
    raw = n.items()
    kind = RUNNERS[raw["kind"].as_choice(tuple(RUNNERS)) if "kind" in raw else "local"]
    settings = [opt for opt in TIMING_OPTIONS if opt.name in kind.timing] + list(kind.options)
    fields = n.items(("kind", *(opt.name for opt in settings)))
    for opt in kind.options:
        if opt.required and opt.name not in fields:
            n.report(f"missing required field '{opt.name}' (runner kind {kind.name})")
    values = _options(settings, fields)
    timing = TimingOptions(**{k: v for k, v in values.items() if k in kind.timing})
    options = {k: v for k, v in values.items() if k not in kind.timing}
    return RunnerSpec(kind=kind.name, timing=timing, options=options)
