"""A task's untuned config (the log line ``tune`` measures first, marked ``"untuned"``) answers
under ``apply_history_best`` unless another record of the task is faster by more than
``layout_choice.MARGIN``: a short tune whose records are a few percent faster than the untuned
config, within timing noise, keeps the untuned build's config.  The mark is an extra key of the
line that TVM's reader does not read; a re-measurement of the untuned config counts as it; the
same rule picks ``pick_best``'s and ``tunecli best``'s records and says why.  The marked records
here are of the config an untuned build runs today (``tuner.untuned``): a mark on another config is
stale and not honoured (``test_untuned_mark``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.engine.log.test_layout_choice import TARGET as CONV_TARGET
from tests.engine.log.test_layout_choice import WORKLOAD as CONV
from tests.engine.log.test_layout_choice import config_in
from tunecli.engine.log.best_of_logs import best_of_logs
from tunecli.engine.log.history_best import ApplyHistoryBest, pick_best
from tunecli.engine.log.layout_choice import MARGIN, choose, explain
from tunecli.engine.log.record import UNTUNED_SOURCES, decode, encode, load_from_file
from tunecli.engine.measure.result import MeasureInput, MeasureResult
from tunecli.engine.ops import registry  # noqa: F401  (registers the built-in templates)
from tunecli.engine.target import Target
from tunecli.engine.task.dispatcher import DispatchContext
from tunecli.engine.task.task import create
from tunecli.engine.tuner.untuned import untuned_config

TARGET = Target("llvm -mcpu=skylake-avx512")
DENSE = ("dense.x86", (64, 64, 64, "float32"))
#: The index of the config an untuned build of DENSE runs (the mark ``tune`` writes is on its line).
U = untuned_config(create(DENSE[0], DENSE[1], TARGET)).config.index


@pytest.fixture(scope="module")
def task():
    return create(DENSE[0], DENSE[1], TARGET)


def record(task, index: int, ms: float, untuned: str | None = None):
    config = task.config_space.get(index)
    if untuned is not None:
        config.untuned = untuned
    return MeasureInput(task.target, task, config), MeasureResult([ms * 1e-3], 0, 0.1, 0.0)


def write_log(path: Path, records) -> Path:
    path.write_text("".join(encode(*r) + "\n" for r in records))
    return path


def answer(source, workload=None, target=TARGET):
    """The config index ``apply_history_best`` of ``source`` answers with."""
    workload = workload or (DENSE[0], *DENSE[1])
    with target, ApplyHistoryBest(source, pretuned=False, nearest=False):
        return int(DispatchContext.current.query(target, workload).index)


def test_a_record_two_percent_faster_than_the_untuned_config_does_not_answer(task, tmp_path: Path):
    log = write_log(tmp_path / "tune.log", [record(task, U, 1.00, "package"), record(task, 9, 0.98),
                                            record(task, 12, 1.30)])
    assert answer(str(log)) == U
    assert answer(list(load_from_file(log))) == U


def test_a_record_twenty_percent_faster_answers(task, tmp_path: Path):
    log = write_log(tmp_path / "tune.log", [record(task, U, 1.00, "default"), record(task, 9, 0.80)])
    assert answer(str(log)) == 9
    assert 0.80 < 1.00 * (1 - MARGIN) < 0.98


def test_the_margin_is_taken_from_the_untuned_configs_cost(task):
    just_within = 1.00 * (1 - MARGIN) + 1e-4
    just_beyond = 1.00 * (1 - MARGIN) - 1e-4
    assert answer([record(task, U, 1.00, "default"), record(task, 9, just_within)]) == U
    assert answer([record(task, U, 1.00, "default"), record(task, 9, just_beyond)]) == 9


def test_without_an_untuned_record_the_fastest_answers_as_in_tvm(task):
    assert answer([record(task, U, 1.00), record(task, 9, 0.98)]) == 9


def test_the_untuned_config_answers_when_it_is_the_fastest(task):
    assert answer([record(task, 9, 1.05), record(task, U, 1.00, "package")]) == U


def test_a_re_measurement_of_the_untuned_config_counts_as_the_untuned_config(task):
    """``tuner.remeasure`` writes plain lines of the same config: its lowest cost is the one compared."""
    records = [record(task, U, 1.20, "package"), record(task, 9, 1.00), record(task, U, 1.02)]
    assert answer(records) == U  # 1.00 is within the margin of 1.02, not of 1.20
    assert answer([record(task, U, 1.20, "package"), record(task, 9, 0.90), record(task, U, 1.02)]) == 9


def test_the_untuned_config_of_another_task_does_not_hold_this_one(task):
    other = create(DENSE[0], (32, 64, 64, "float32"), TARGET)
    theirs = untuned_config(other).config.index
    records = [record(other, theirs, 1.00, "package"), record(task, U, 1.00), record(task, 9, 0.98)]
    assert answer(records) == 9


def test_a_record_in_other_layouts_must_beat_the_untuned_config_by_the_margin():
    conv = create(CONV[0], CONV[1:], CONV_TARGET)
    untuned, tuned_default = untuned_config(conv).config, config_in(conv, True)
    other = config_in(conv, False)
    assert untuned.index != tuned_default.index
    untuned.untuned = "default"

    def rec(config, ms):
        return MeasureInput(CONV_TARGET, conv, config), MeasureResult([ms * 1e-3], 0, 0.1, 0.0)

    def chosen(records):
        return answer(records, CONV, CONV_TARGET)

    assert chosen([rec(untuned, 1.00), rec(other, 0.97)]) == untuned.index
    assert chosen([rec(untuned, 1.00), rec(tuned_default, 0.97)]) == untuned.index
    assert chosen([rec(untuned, 1.00), rec(other, 0.80)]) == other.index
    # beating the untuned config is not enough: the default layouts still win a near-tie
    assert chosen([rec(untuned, 1.00), rec(tuned_default, 0.80), rec(other, 0.78)]) == tuned_default.index


def test_explain_says_why_the_untuned_config_answers(task):
    choice = explain([record(task, U, 1.00, "package"), record(task, 9, 0.98)])
    assert choice is not None and int(choice.record[0].config.index) == U
    assert choice.why == "the untuned config (package): config 9 is only 2.0% faster (margin 5%)"
    choice = explain([record(task, U, 1.00, "package"), record(task, 9, 0.80)])
    assert choice.why == "the fastest record: 20.0% faster than the untuned config (package), over 5%"
    assert explain([record(task, 9, 0.98)]).why == "the fastest record"
    assert choose([]) is None


def test_the_mark_is_an_extra_key_tvm_does_not_read_and_it_survives_a_round_trip(task):
    inp, res = record(task, U, 1.00, "package")
    line = encode(inp, res)
    row = json.loads(line)
    assert list(row) == ["input", "config", "result", "version", "tvm_version", "untuned"]
    assert row["untuned"] == "package"
    del row["untuned"]  # what TVM's reader reads: the same record
    plain = encode(*record(task, U, 1.00))
    assert json.dumps(row) == plain and decode(plain)[0].config.untuned is None
    again = decode(line)
    assert again[0].config.untuned == "package" and encode(*again) == line
    assert decode(encode(inp, res, "pickle"), "pickle")[0].config.untuned == "package"


def test_a_line_with_an_unknown_untuned_value_is_skipped(task, tmp_path: Path, caplog):
    good = encode(*record(task, 9, 1.00))
    bad = encode(*record(task, U, 1.00, "package")).replace('"package"', '"someone"')
    log = tmp_path / "bad.log"
    log.write_text(bad + "\n" + good + "\n")
    assert [int(inp.config.index) for inp, _ in load_from_file(log)] == [9]
    assert "bad.log:1" in caplog.text and all(s in caplog.text for s in UNTUNED_SOURCES)


def test_pick_best_and_best_keep_the_untuned_record_with_its_mark(task, tmp_path: Path):
    log = write_log(tmp_path / "tune.log", [record(task, U, 1.00, "package"), record(task, 9, 0.98)])
    picked = tmp_path / "picked.log"
    pick_best(log, picked)
    [(inp, _)] = list(load_from_file(picked))
    assert int(inp.config.index) == U and inp.config.untuned == "package"

    out = tmp_path / "best.log"
    report = best_of_logs([str(log)], top=1, out=out)
    [workload] = report.workloads
    assert [e.index for e in workload.best] == [9]  # ranked by cost
    assert workload.chosen == U and "only 2.0% faster (margin 5%)" in workload.why
    assert answer(str(out)) == U == answer(str(log))
    listed = best_of_logs([str(log)], top=2).workloads[0]
    assert [(e.index, e.untuned) for e in listed.best] == [(9, None), (U, "package")]
    assert report.as_dict()["workloads"][0]["chosen"] == U


def test_apply_history_best_says_why_its_record_answers(task):
    context = ApplyHistoryBest([record(task, U, 1.00, "package"), record(task, 9, 0.98)], pretuned=False)
    workload = (DENSE[0], *DENSE[1])
    assert "the untuned config (package)" in context.why(TARGET, workload)
    plain = ApplyHistoryBest([record(task, 9, 0.98)], pretuned=False)
    assert plain.why(TARGET, workload) == "the fastest record"
    assert context.why(TARGET, ("dense.x86", 1, 2, 3, "float32")) is None
