"""What tuning a job reports: an event per measurement (``TuneEvent``), each task's outcome
(``TaskOutcome``) and the run's summary (``TuneSummary``, what ``tunecli tune --json`` prints)."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field

from tunecli.engine.job.model_spec import GraphTuning
from tunecli.engine.log.record import JsonValue
from tunecli.engine.measure.time_stats import MachineLoad
from tunecli.engine.task.workload_args import WorkloadArg
from tunecli.engine.tuner.alternatives import operator_groups, weighted_latency


@dataclass(frozen=True)
class TuneEvent:
    """Progress of one task, sent to the ``on_event`` callback of ``tune_job``.

    Attributes
    ----------
    kind : {"start", "batch", "remeasure", "end"}
        ``"batch"`` is sent after every finished measurement (not only at the end of a batch),
        re-measurements included; ``"remeasure"`` when the task's best configs are about to be
        measured again.
    index, n_tasks : int
        Which task of how many (0-based index).
    label : str
        The task's template name and arguments.
    total : int
        Trials wanted for this task (``n_trial``, at most the size of its space); with a budget,
        the most it can get (the budget, at most the size of its space).
    done : int
        Trials in the log for this task, including those of this run.
    cur_flops, best_flops : float
        FLOPS of the last measurement (0 when it failed), and the best so far (log included).
    errors : int
        Failed measurements in this run.
    elapsed : float
        Seconds since this task started.
    budget : int or None
        The job's budget (trials for all tasks), None when it gives trials per task.
    spent : int
        Trials of all tasks in the log, this run's included (without a budget: of the tasks
        started so far).
    all_trials : int
        Trials wanted for all tasks: the budget, or the sum of the tasks' ``total``.
    remeasuring : int
        With ``"remeasure"``: how many configs are measured again.
    """

    kind: str
    index: int
    n_tasks: int
    label: str
    total: int
    done: int
    cur_flops: float = 0.0
    best_flops: float = 0.0
    errors: int = 0
    elapsed: float = 0.0
    budget: int | None = None
    spent: int = 0
    all_trials: int = 0
    remeasuring: int = 0


@dataclass
class TaskOutcome:
    """What tuning did for one task (part of ``TuneSummary``)."""

    index: int
    template: str
    args: list[WorkloadArg]
    flop: float
    space: int
    n_trial: int
    previous: int = 0
    measured: int = 0
    errors: int = 0
    best_flops: float = 0.0
    best_cost: float | None = None
    best_index: int | None = None
    best_config: str | None = None
    first_error: str | None = None
    weight: float = 1.0
    remeasured: int = 0  #: measurements of configs measured before (``tuner.remeasure``), not trials

    @property
    def ok(self) -> bool:
        """True when a valid config is known for this task (measured now or before)."""
        return self.best_index is not None


@dataclass
class TuneSummary:
    """The result of ``tune_job``; ``as_dict()`` is what ``tunecli tune --json`` prints."""

    job: str
    log: str
    target: str
    tuner: str
    seed: int | None
    budget: int | None = None
    task_scheduler: str | None = None
    remeasure: int = 0  #: the job's ``tuner.remeasure`` (K best configs of each task measured again)
    tasks: list[TaskOutcome] = field(default_factory=list)
    model: str | None = None  #: the network of a model job
    graph: GraphTuning | None = None  #: what the graph tuner chose (model jobs with graph_tuner)
    #: groups of task indices that implement one operator (a build runs the fastest of each)
    alternatives: list[list[int]] = field(default_factory=list)
    #: other work on this machine while it measured (None: nothing measured here)
    load: MachineLoad | None = None

    @property
    def notes(self) -> list[str]:
        """What makes the measured times doubtful: a busy machine (with what to do about it)."""
        busy = self.load.note("tune", "tuning") if self.load is not None else None
        if busy is None:
            return []
        hint = ("; `tuner: {remeasure: 8}` (or --remeasure 8) measures each task's best configs again "
                "at its end" if not self.remeasure else "")
        return [busy + hint]

    @property
    def ok(self) -> bool:
        """True when every operator has a task with a valid config (an alternative without one is not
        needed: the build runs another of its operator's tasks)."""
        return not self.unconfigured()

    def unconfigured(self) -> list[TaskOutcome]:
        """The tasks without a valid config whose operator has no other task with one."""
        groups = operator_groups(len(self.tasks), self.alternatives)
        return [self.tasks[i] for g in groups if not any(self.tasks[j].ok for j in g) for i in g]

    @property
    def weighted_latency(self) -> float | None:
        """``sum(weight * best latency)`` in seconds over the tasks, the alternatives of an operator
        at the fastest's (``tuner.alternatives``; None while an operator has no config)."""
        if not self.tasks:
            return None
        latency = weighted_latency([t.best_cost if t.best_cost is not None else math.inf for t in self.tasks],
                                   [t.weight for t in self.tasks],
                                   operator_groups(len(self.tasks), self.alternatives))
        return latency if math.isfinite(latency) else None

    def as_dict(self) -> dict[str, JsonValue]:
        """Return a JSON-serialisable dict."""
        out = asdict(self)
        for task, entry in zip(self.tasks, out["tasks"], strict=True):
            entry["ok"] = task.ok
        out["ok"] = self.ok
        out["weighted_latency"] = self.weighted_latency
        out["notes"] = self.notes
        return out
