"""Among a workload's records, one in other channel blocks than the template's default layouts
answers only when it is faster than the fastest default-layout record by more than
``MARGIN``; a near-tie keeps the default layouts (no layout transforms around the kernel).
Records of a workload without a default-layout record are ranked by cost alone, and ``pick_best``
keeps what the context answers."""

from __future__ import annotations

from pathlib import Path

import pytest

from tunecli.engine.graph_tuner import default_layouts
from tunecli.engine.log import nearest_record
from tunecli.engine.log.best_of_logs import best_of_logs
from tunecli.engine.log.history_best import ApplyHistoryBest, pick_best
from tunecli.engine.log.layout_choice import LAYOUT_KNOBS, MARGIN, default_layout, layout_key
from tunecli.engine.log.record import encode
from tunecli.engine.measure.result import MeasureInput, MeasureResult
from tunecli.engine.target import Target
from tunecli.engine.task.dispatcher import DispatchContext
from tunecli.engine.task.task import create

TARGET = Target("llvm -mcpu=skylake-avx512")
WORKLOAD = ("conv2d_NCHWc.x86", ("TENSOR", (1, 64, 16, 16), "float32"), ("TENSOR", (64, 64, 3, 3), "float32"),
            (1, 1), (1, 1, 1, 1), (1, 1), "NCHW", "NCHW", "float32")


@pytest.fixture(scope="module")
def task():
    return create(WORKLOAD[0], WORKLOAD[1:], TARGET)


def config_in(task, default: bool, skip: int = 0):
    """A config of ``task`` in the default layouts (or not), the ``skip``-th such one."""
    wanted = default_layout(TARGET, WORKLOAD)
    found = [i for i in range(min(len(task.config_space), 4000))
             if (layout_key(task.config_space.get(i)) == wanted) == default]
    return task.config_space.get(found[skip])


def record(task, config, ms: float):
    return MeasureInput(TARGET, task, config), MeasureResult([ms * 1e-3], 0, 0.1, 0.0)


def write_log(path: Path, records) -> Path:
    path.write_text("".join(encode(*r) + "\n" for r in records))
    return path


def answer(records):
    with TARGET, ApplyHistoryBest(records, pretuned=False, nearest=False):
        return DispatchContext.current.query(TARGET, WORKLOAD)


def test_layout_knobs_have_one_definition():
    assert nearest_record.LAYOUT_KNOBS is LAYOUT_KNOBS
    assert default_layouts.LAYOUT_KNOBS is LAYOUT_KNOBS


def test_the_default_layout_is_the_fallback_configs_blocks():
    # conv2d_nchwc.network_channel_block: two AVX-512 vectors
    assert default_layout(TARGET, WORKLOAD) == (("tile_ic", (32,)), ("tile_oc", (32,)))


def test_a_near_tie_in_other_layouts_keeps_the_default_layout_record(task):
    default, other = config_in(task, True), config_in(task, False)
    chosen = answer([record(task, default, 1.00), record(task, other, 0.98)])
    assert chosen.index == default.index
    # whatever the order of the records
    assert answer([record(task, other, 0.98), record(task, default, 1.00)]).index == default.index


def test_other_layouts_answer_when_faster_by_more_than_the_margin(task):
    default, other = config_in(task, True), config_in(task, False)
    chosen = answer([record(task, default, 1.00), record(task, other, 0.90)])
    assert chosen.index == other.index
    assert 0.90 < 1.00 * (1 - MARGIN) < 0.98


def test_the_fastest_default_layout_record_answers_the_near_tie(task):
    slow_default, fast_default = config_in(task, True), config_in(task, True, skip=1)
    other = config_in(task, False)
    records = [record(task, slow_default, 1.50), record(task, other, 0.98), record(task, fast_default, 1.00)]
    assert answer(records).index == fast_default.index


def test_without_a_default_layout_record_the_fastest_answers(task):
    first = config_in(task, False)
    second = next(config_in(task, False, skip=k) for k in range(1, 4000)
                  if layout_key(config_in(task, False, skip=k)) != layout_key(first))
    assert answer([record(task, first, 1.00), record(task, second, 0.99)]).index == second.index
    assert answer([record(task, first, 0.99), record(task, second, 1.00)]).index == first.index


def test_pick_best_keeps_the_record_the_context_answers_with(task, tmp_path: Path):
    default, other = config_in(task, True), config_in(task, False)
    log = write_log(tmp_path / "tune.log", [record(task, other, 0.98), record(task, default, 1.00)])
    picked = tmp_path / "best.log"
    pick_best(log, picked)
    assert answer(str(picked)).index == default.index == answer(str(log)).index


def test_the_log_best_writes_answers_as_the_logs_it_read(task, tmp_path: Path):
    default, other = config_in(task, True), config_in(task, False)
    log = write_log(tmp_path / "tune.log", [record(task, other, 0.98), record(task, default, 1.00)])
    out = tmp_path / "best.log"
    report = best_of_logs([str(log)], top=1, out=out)
    assert [e.index for e in report.workloads[0].best] == [other.index]  # ranked by cost
    assert answer(str(out)).index == default.index == answer(str(log)).index
