"""``inspect_job`` (config spaces, lowered loop nests) and ``inspect_log`` (what a log holds).

``inspect_job`` prints each task's space exactly as ``print(task.config_space)`` does and, for
one config index, the loop nest the template lowers to.  ``inspect_log`` summarises a log:
records and errors by kind per workload, and the best-so-far curve of each workload over its
trials (GFLOPS where the FLOP count is known, milliseconds otherwise), optionally as a PNG.
"""

from __future__ import annotations

import os
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from tunecli.engine.build import lower
from tunecli.engine.job.best_of_logs import workload_flop
from tunecli.engine.job.spec import load_job
from tunecli.engine.job.tasks import check_task_index, create_task
from tunecli.engine.job.text import config_text, workload_text
from tunecli.engine.job.tune_job import task_label
from tunecli.engine.log.record import load_from_file
from tunecli.engine.log.task_records import record_key
from tunecli.engine.measure.result import MeasureErrorNo
from tunecli.errors import JobError, RecordError


@dataclass(frozen=True)
class TaskView:
    """One task of ``inspect_job``: its space text and, with a config, the lowered loop nest."""

    index: int
    label: str
    flop: float
    space: str
    config: str | None = None
    lowered: str | None = None


def inspect_job(path: str, task: int | None = None, config: int | None = None) -> list[TaskView]:
    """Describe the tasks of a job: config spaces, and one config's loop nest.

    Parameters
    ----------
    path : str
        The job file.
    task : int, optional
        Only this task (0-based); all by default.
    config : int, optional
        A config index: also lower the template with that config.

    Returns
    -------
    list of TaskView

    Raises
    ------
    JobError
        For an invalid job, task number or config index.
    """
    job = load_job(path)
    views = []
    for i in check_task_index(job, task):
        t = create_task(job, i)
        space = t.config_space
        view = TaskView(i, task_label(t), float(t.flop or 0), str(space))
        if config is not None:
            if not 0 <= config < space.range_length or not space.is_index_valid(config):
                raise JobError(f"{path}: --config {config}: not a valid config index of task {i} "
                               f"(the space has {len(space)} configs, indices 0..{space.range_length - 1})")
            entity = space.get(config)
            with t.target:
                sch, args = t.instantiate(entity)
                lowered = str(lower(sch, args, name="main"))
            view = TaskView(i, view.label, view.flop, view.space, config_text(entity), lowered)
        views.append(view)
    return views


@dataclass
class WorkloadCurve:
    """The trials of one (target, workload) in log order."""

    target: str
    label: str
    flop: float | None
    errors: Counter = field(default_factory=Counter)
    costs: list[float | None] = field(default_factory=list)

    @property
    def unit(self) -> str:
        """``"GFLOPS"`` when the FLOP count is known, else ``"ms"``."""
        return "GFLOPS" if self.flop else "ms"

    def best_so_far(self) -> list[float | None]:
        """Best value after each trial (GFLOPS: higher is better; ms: lower is better)."""
        out: list[float | None] = []
        best: float | None = None
        for cost in self.costs:
            if cost is not None and cost > 0:
                if best is None or cost < best:
                    best = cost
            out.append(None if best is None else (self.flop / best / 1e9 if self.flop else best * 1e3))
        return out


@dataclass
class LogView:
    """What ``inspect_log`` found; ``as_dict()`` is the JSON form."""

    path: str
    records: int = 0
    errors: Counter = field(default_factory=Counter)
    workloads: list[WorkloadCurve] = field(default_factory=list)
    png: str | None = None

    def as_dict(self) -> dict[str, Any]:
        """Return a JSON-serialisable dict."""
        return {"path": self.path, "records": self.records, "errors": dict(self.errors), "png": self.png,
                "workloads": [{"target": w.target, "workload": w.label, "trials": len(w.costs),
                               "errors": dict(w.errors), "unit": w.unit, "best": w.best_so_far()[-1]}
                              for w in self.workloads]}


def inspect_log(path: str, png: str | os.PathLike | None = None) -> LogView:
    """Summarise a tuning log and optionally plot its convergence to a PNG file.

    Parameters
    ----------
    path : str
    png : path, optional
        Write the best-so-far curves there (matplotlib, Agg backend).

    Returns
    -------
    LogView

    Raises
    ------
    RecordError
        When the log cannot be read.
    """
    if not Path(path).is_file():
        raise RecordError(f"{path}: no such log file")
    view = LogView(path)
    curves: dict[tuple, WorkloadCurve] = {}
    for inp, res in load_from_file(path):
        view.records += 1
        key = record_key(inp)
        if key not in curves:
            label = workload_text(inp.task.name, inp.task.args)
            target = str(inp.target)
            curves[key] = WorkloadCurve(target, label, workload_flop(inp.task.name, inp.task.args, target))
        curve = curves[key]
        if res.error_no == 0:
            curve.costs.append(float(np.mean(res.costs)))
        else:
            kind = _error_name(res.error_no)
            curve.errors[kind] += 1
            view.errors[kind] += 1
            curve.costs.append(None)
    view.workloads = list(curves.values())
    if png is not None:
        write_png(view, png)
        view.png = str(png)
    return view


def _error_name(error_no: Any) -> str:
    try:
        return MeasureErrorNo(int(error_no)).name
    except ValueError:
        return f"ERROR_{error_no}"


def write_png(view: LogView, png: str | os.PathLike) -> None:
    """Plot the best-so-far curve of every workload of ``view`` into ``png``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    units = sorted({w.unit for w in view.workloads}) or ["GFLOPS"]
    fig, axes = plt.subplots(len(units), 1, figsize=(12, 4 * len(units)), squeeze=False)
    try:
        for ax, unit in zip(axes[:, 0], units, strict=True):
            for curve in (w for w in view.workloads if w.unit == unit):
                ys = [np.nan if y is None else y for y in curve.best_so_far()]
                # markers keep a workload with a single record (e.g. a pick_best log) visible
                ax.plot(range(1, len(ys) + 1), ys, label=curve.label[:90],
                        marker="o" if len(ys) < 30 else None, markersize=3)
            ax.set_xlabel("trial")
            ax.set_ylabel(f"best {unit}")
            ax.grid(True, alpha=0.3)
            longest = max((len(w.costs) for w in view.workloads if w.unit == unit), default=1)
            ax.set_xlim(0.5, longest + 0.5)
            ax.xaxis.set_major_locator(MaxNLocator(integer=True, min_n_ticks=1))
            if len(view.workloads) <= 12:
                ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
        axes[0, 0].set_title(f"convergence of {Path(view.path).name}")
        fig.tight_layout()
        Path(png).parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(png, dpi=100)
    finally:
        plt.close(fig)
