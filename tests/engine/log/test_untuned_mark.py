"""A log's ``"untuned"`` mark is honoured by the ranking only while it names the config an untuned
build runs today: a log tuned before a package answered the workload (or before a fallback rule
changed) has its mark on a config the untuned build no longer runs, and that record then ranks as
an ordinary one, which ``apply_history_best``'s ``why``, ``tunecli best`` and ``inspect`` say.

The logs are written by a real tune step (``measure_untuned``) or hold the untuned config that the
real selection (``tuner.untuned.untuned_config``: packages, nearest record, fallback rules) gives;
the packages change as a user changes them (``TUNECLI_TOPHUB``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tunecli.engine.log import tophub
from tunecli.engine.log.best_of_logs import best_of_logs
from tunecli.engine.log.history_best import ApplyHistoryBest, untuned_answer
from tunecli.engine.log.layout_choice import MARGIN, config_knobs
from tunecli.engine.log.record import encode, load_from_file
from tunecli.engine.log.task_history import TaskHistory, task_history
from tunecli.engine.log.untuned_mark import untuned_knobs
from tunecli.engine.measure import LocalBuilder, LocalRunner, measure_option
from tunecli.engine.measure.result import MeasureInput, MeasureResult
from tunecli.engine.ops import registry  # noqa: F401  (registers the built-in templates)
from tunecli.engine.target import Target
from tunecli.engine.task.dispatcher import DispatchContext
from tunecli.engine.task.task import create
from tunecli.engine.tuner.callback import log_to_file
from tunecli.engine.tuner.untuned import measure_untuned, untuned_config

TARGET = Target("llvm -mcpu=skylake-avx512")
DENSE = ("dense.x86", (64, 64, 64, "float32"))
WORKLOAD = (DENSE[0], *DENSE[1])


@pytest.fixture
def task():
    return create(DENSE[0], DENSE[1], TARGET)


@pytest.fixture
def without_packages(monkeypatch: pytest.MonkeyPatch):
    """Switch the pre-tuned packages off (as on a day they did not answer the workload); ``on()`` back."""
    class Packages:
        def off(self) -> None:
            monkeypatch.setenv(tophub.ENV_VAR, tophub.DISABLED)

        def on(self) -> None:
            monkeypatch.delenv(tophub.ENV_VAR, raising=False)

    packages = Packages()
    packages.off()
    return packages


def record(task, index: int, ms: float, untuned: str | None = None):
    config = task.config_space.get(index)
    config.untuned = untuned
    return MeasureInput(task.target, task, config), MeasureResult([ms * 1e-3], 0, 0.1, 0.0)


def untuned_and_other(task) -> tuple[int, int]:
    """The index of the untuned config (the packages as they are now) and of another valid config."""
    untuned = untuned_config(task).config.index
    return untuned, next(i for i in range(len(task.config_space))
                         if i != untuned and task.config_space.is_index_valid(i))


def write_log(path: Path, records) -> Path:
    path.write_text("".join(encode(*r) + "\n" for r in records))
    return path


def answer(log: Path) -> tuple[int, str | None]:
    """The config index ``apply_history_best`` of ``log`` answers with, and why."""
    with TARGET, ApplyHistoryBest(str(log)) as context:
        return int(DispatchContext.current.query(TARGET, WORKLOAD).index), context.why(TARGET, WORKLOAD)


def test_the_packages_decide_which_config_is_the_untuned_one(task, without_packages):
    """The ground the tests below stand on: this workload's untuned config is the fallback's without
    packages and the nearest package record's with them, two different configs."""
    then = untuned_config(task)
    without_packages.on()
    today = untuned_config(task)
    assert (then.source, today.source) == ("default", "nearest") and then.exact and today.exact
    assert then.config.index != today.config.index
    with TARGET:
        assert untuned_knobs(TARGET, WORKLOAD, untuned_answer) == config_knobs(today.config)


def test_a_mark_made_before_a_package_answered_the_workload_is_not_honoured(task, without_packages,
                                                                            tmp_path: Path):
    then, challenger = untuned_and_other(task)  # the tune's day: no package, the fallback config
    near_tie = 1.00 * (1 - MARGIN / 2)
    log = write_log(tmp_path / "tune.log", [record(task, then, 1.00, "default"),
                                            record(task, challenger, near_tie)])

    chosen, why = answer(log)  # on that day the mark holds: a near-tie keeps the untuned config
    assert chosen == then and why.startswith("the untuned config (default)")

    without_packages.on()  # today a package record answers: the marked config is no longer untuned
    chosen, why = answer(log)
    assert chosen == challenger  # the fastest record, the stale mark an ordinary record
    assert why == (f"the fastest record; config {then}, marked untuned (default) by the tune, is no longer "
                   "what the untuned build runs (the packages or fallback rules changed since): ranked as an "
                   "ordinary record")
    with TARGET:
        context = ApplyHistoryBest(str(log))
        assert [int(inp.config.index) for inp in context.stale_marks.values()] == [then]


def test_tunecli_best_says_a_mark_is_stale_and_ranks_without_it(task, without_packages, tmp_path: Path):
    then, challenger = untuned_and_other(task)
    log = write_log(tmp_path / "tune.log", [record(task, then, 1.00, "default"),
                                            record(task, challenger, 0.98)])
    [held] = best_of_logs([str(log)], top=2).workloads
    assert (held.chosen, held.stale) == (then, None)
    assert [(e.index, e.untuned) for e in held.best] == [(challenger, None), (then, "default")]

    without_packages.on()
    out = tmp_path / "best.log"
    [stale] = best_of_logs([str(log)], top=1, out=out).workloads
    assert stale.chosen == challenger and stale.why == "the fastest record"
    assert stale.stale.startswith(f"config {then}, marked untuned (default) by the tune, is no longer what")
    assert [e.untuned for e in stale.best] == [None]
    assert answer(out)[0] == challenger == answer(log)[0]  # the picked log answers as the log does


def test_a_tune_step_marks_its_untuned_config_and_the_next_tune_marks_todays(task, without_packages,
                                                                            tmp_path: Path):
    """A real tune step (``measure_untuned``) writes the mark; once the packages changed the ranking
    stops honouring it, and the next tune step measures and marks today's untuned config (also where
    the log holds it unmarked, as a random trial measured it)."""
    log = tmp_path / "tune.log"
    option = measure_option(LocalBuilder(n_parallel=1), LocalRunner(number=1, repeat=1, cooldown_interval=0))
    [(then, res)] = measure_untuned(task, TaskHistory(), option, [log_to_file(str(log))])
    assert res.ok and then.config.untuned == "default"
    with TARGET:
        why = ApplyHistoryBest(str(log)).why(TARGET, WORKLOAD)
    assert why == "the untuned config (default), the fastest record"

    without_packages.on()
    with TARGET:
        context = ApplyHistoryBest(str(log))
        assert "marked untuned (default) by the tune, is no longer" in context.why(TARGET, WORKLOAD)
        assert [int(inp.config.index) for inp in context.stale_marks.values()] == [int(then.config.index)]
    today = untuned_config(task).config  # once measured as an ordinary trial (a line without the mark)
    log.write_text(log.read_text() + encode(MeasureInput(task.target, task, today), res) + "\n")
    [(now, again)] = measure_untuned(task, task_history(task, load_from_file(log)), option,
                                     [log_to_file(str(log))])
    assert again.ok and (int(now.config.index), now.config.untuned) == (today.index, "nearest")
    assert measure_untuned(task, task_history(task, load_from_file(log)), option) == []  # held, marked
    with TARGET:
        context = ApplyHistoryBest(str(log))
        why = context.why(TARGET, WORKLOAD)
        assert [inp.config.untuned for inp, _ in context.best_by_target.values()] in (["nearest"], [None])
    assert why.startswith(("the untuned config (nearest)", "the fastest record"))
    assert "marked untuned (default) by the tune, is no longer" in why


def test_a_current_mark_on_a_template_with_reorder_and_annotation_knobs_holds(tmp_path: Path):
    """Knobs compare by value whatever their kind (an arm_cpu convolution reorders and annotates):
    the untuned config's mark, just written, is current."""
    arm = Target("llvm -mtriple=aarch64-linux-gnu -mattr=+neon")
    conv = create("conv2d_nchw_spatial_pack.arm_cpu", (("TENSOR", (1, 32, 28, 28), "float32"),
                                                       ("TENSOR", (64, 32, 1, 1), "float32"),
                                                       (1, 1), (0, 0, 0, 0), (1, 1), "float32"), arm)
    found = untuned_config(conv)
    assert found.exact and {"reorder_0", "ann_spatial"} <= set(conv.config_space.space_map)
    log = write_log(tmp_path / "arm.log", [record(conv, found.config.index, 1.00, found.source)])
    with arm:
        context = ApplyHistoryBest(str(log))
        assert context.stale_marks == {}
        assert context.why(arm, conv.workload).startswith(f"the untuned config ({found.source})")
