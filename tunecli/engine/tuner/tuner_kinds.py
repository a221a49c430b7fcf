"""The tuner registry: every tuner kind a job can name, its class and its options (TVM's names).

Everything that lists tuners reads :data:`TUNERS`: the job schema (``tuner.kind`` and the
kind-specific options it accepts), ``tunecli tune --tuner``, ``tune_job`` (which makes the
tuner), the README's table of tuners (a test checks that it lists exactly these) and the tuner
tests' parametrisation. Adding a tuner is adding one :class:`TunerKind` here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeAlias

from tunecli.engine.option import Option
from tunecli.engine.tuner.features import FEATURE_TYPES
from tunecli.engine.tuner.ga_tuner import ELITE_NUM, POP_SIZE, GATuner, elite_num_problem
from tunecli.engine.tuner.index_tuners import GridSearchTuner, RandomTuner
from tunecli.engine.tuner.tuner import Tuner
from tunecli.engine.tuner.xgb_cost_model import LOSS_TYPES
from tunecli.engine.tuner.xgb_tuner import XGBTuner
from tunecli.errors import TuneError

if TYPE_CHECKING:
    from tunecli.engine.task.task import Task

#: ``check(options) -> (option to blame, problem)`` or None: a rule across options.
#: A tuner's options by name, as a job or ``--tuner`` gives them (parsed by their :class:`Option`).
TunerOptions: TypeAlias = dict[str, int | float | str | bool | None]
#: ``check(options) -> (option to blame, problem)`` or None: a rule across options.
OptionsCheck = Callable[[TunerOptions], tuple[str, str] | None]


@dataclass(frozen=True)
class TunerKind:
    """One registered tuner.

    Attributes
    ----------
    name : str
        What a job's ``tuner.kind`` and ``--tuner`` say.
    cls : type
        The :class:`Tuner` subclass, made as ``cls(task, seed=seed, **options)``.
    summary : str
        One line saying how it searches.
    options : tuple of Option
        The keyword arguments a job may give it (TVM's names); None defaults are the class's.
    check : callable, optional
        A rule across options (see :data:`OptionsCheck`).
    """

    name: str
    cls: type[Tuner]
    summary: str
    options: tuple[Option, ...] = ()
    check: OptionsCheck | None = None

    def option(self, name: str) -> Option | None:
        """The option called ``name`` (None if this tuner has none)."""
        return next((opt for opt in self.options if opt.name == name), None)

    def problem(self, options: TunerOptions) -> tuple[str, str] | None:
        """``(option, problem)`` for the first bad option in ``options``, or None."""
        for name, value in options.items():
            opt = self.option(name)
            if opt is None:
                return name, f"unknown option of tuner {self.name} (expected one of: " \
                              f"{', '.join(o.name for o in self.options) or 'none'})"
            problem = opt.problem(value)
            if problem:
                return name, problem
        return self.check(options) if self.check is not None else None

    def make(self, task: Task, seed: int | None = None, **options: int | float | str | bool | None) -> Tuner:
        """A tuner of this kind for ``task``.

        Raises
        ------
        TuneError
            When an option is unknown or out of range.
        """
        problem = self.problem(options)
        if problem:
            raise TuneError(f"tuner {self.name}: {problem[0]}: {problem[1]}")
        return self.cls(task, seed=seed, **options)


def _ga_check(options: TunerOptions) -> tuple[str, str] | None:
    problem = elite_num_problem(options.get("pop_size", POP_SIZE), options.get("elite_num", ELITE_NUM))
    if problem is None:
        return None
    return ("elite_num" if "elite_num" in options else "pop_size"), problem


def _xgb_check(options: TunerOptions) -> tuple[str, str] | None:
    plan_size, first_fit = options.get("plan_size", 64), options.get("first_fit")
    if first_fit is not None and first_fit > plan_size:
        return "first_fit", f"must not exceed plan_size ({first_fit} > {plan_size})"
    return None


_KINDS = (
    TunerKind("random", RandomTuner, "configs in random order, none twice"),
    TunerKind("gridsearch", GridSearchTuner, "configs in index order"),
    TunerKind("ga", GATuner, "genetic algorithm over the knobs", (
        Option("pop_size", int, POP_SIZE, minimum=1, help="genes per generation"),
        Option("elite_num", int, ELITE_NUM, minimum=1, help="best genes kept as parents"),
        Option("mutation_prob", float, 0.1, minimum=0, maximum=1, help="chance that a knob mutates"),
    ), _ga_check),
    TunerKind("xgb", XGBTuner, "XGBoost cost model searched by simulated annealing", (
        Option("plan_size", int, minimum=1, help="trials per plan (model refitted after each)"),
        Option("feature_type", str, choices=FEATURE_TYPES, help="features of the cost model"),
        Option("loss_type", str, choices=LOSS_TYPES, help="objective of the cost model"),
        Option("num_threads", int, minimum=1, help="xgboost threads"),
        Option("diversity_filter_ratio", float, minimum=1,
               help="candidates per plan slot kept for diversity"),
        Option("log_interval", int, minimum=1, help="boosting rounds between log lines"),
        Option("rerank_factor", int, minimum=1,
               help="candidates per plan slot re-ranked by the loop-nest model"),
        Option("first_fit", int, minimum=1,
               help="measurements before the model's first fit (default 8; plan_size: TVM's schedule)"),
        Option("min_seed_records", int, minimum=1,
               help="records of the template (other tasks', the log's) before transfer learning "
                    "(default 100; TVM 500)"),
    ), _xgb_check),
)

#: Every tuner kind by name, in the order they are listed.
TUNERS: dict[str, TunerKind] = {kind.name: kind for kind in _KINDS}


def tuner_kind(name: str) -> TunerKind:
    """The registered tuner called ``name``.

    Raises
    ------
    TuneError
        When no tuner has that name (the message lists the registered ones).
    """
    try:
        return TUNERS[name]
    except KeyError:
        raise TuneError(f"unknown tuner {name!r} (registered: {', '.join(TUNERS)})") from None
