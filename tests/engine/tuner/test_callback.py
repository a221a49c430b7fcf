"""Callbacks: log_to_file appends and flushes per record; progress_bar prints TVM's line."""

from __future__ import annotations

import io

import pytest

from tunecli.engine.log.record import encode, load_from_file
from tunecli.engine.measure.result import MeasureInput, MeasureResult
from tunecli.engine.target import Target
from tunecli.engine.task.space import ConfigSpace
from tunecli.engine.task.task import Task
from tunecli.engine.tuner import GridSearchTuner
from tunecli.engine.tuner.callback import (
    Monitor,
    format_si_prefix,
    log_to_database,
    log_to_file,
    progress_bar,
)
from tunecli.errors import TuneError


def batch() -> tuple[list, list]:
    space = ConfigSpace()
    space.define_split("tile", 16, num_outputs=2)
    task = Task("testing/cb", (16,))
    task.flop = 2e9
    task.config_space = space
    inputs = [MeasureInput(Target("llvm"), task, space.get(i)) for i in range(3)]
    results = [MeasureResult((1.0,), 0, 1.0, 10.0), MeasureResult((0.5,), 0, 1.0, 11.0),
               MeasureResult((1e9,), 4, 1.0, 12.0)]
    return inputs, results


def test_log_to_file_appends_each_call(tmp_path) -> None:
    path = tmp_path / "t.log"
    cb = log_to_file(str(path))
    inputs, results = batch()
    cb(None, inputs[:2], results[:2])
    cb(None, inputs[2:], results[2:])
    pairs = list(load_from_file(path))
    assert [inp.config.index for inp, _ in pairs] == [0, 1, 2]
    buf = io.StringIO()
    log_to_file(buf)(None, inputs, results)
    assert len(buf.getvalue().splitlines()) == 3


def test_log_to_file_starts_a_fresh_line_after_a_cut_off_record(tmp_path) -> None:
    path = tmp_path / "cut.log"
    inputs, results = batch()
    whole = encode(inputs[0], results[0])
    path.write_text(whole + "\n" + whole[:50])  # a crash mid-write left half a line
    log_to_file(str(path)).on_result(None, inputs[1], results[1])
    assert path.read_text().splitlines()[2] == encode(inputs[1], results[1])
    assert [inp.config.index for inp, _ in load_from_file(path)] == [0, 1]


def test_monitor_records_scores_and_timestamps() -> None:
    mon = Monitor()
    inputs, results = batch()
    mon(None, inputs, results)
    assert mon.trial_scores().tolist() == [2e9, 4e9, 0.0]
    assert mon.trial_timestamps().tolist() == [10.0, 11.0, 12.0]
    mon.reset()
    assert mon.trial_scores().tolist() == []


def test_progress_bar_prints_tvm_format() -> None:
    out = io.StringIO()
    bar = progress_bar(10, prefix="[Task  1/12] ", out=out)
    inputs, results = batch()
    tuner = GridSearchTuner(inputs[0].task)
    tuner.best_flops = 3e9
    bar(tuner, inputs, results)
    bar.done()
    lines = out.getvalue().split("\r")
    assert lines[1].startswith("[Task  1/12]  Current/Best:    0.00/   0.00 GFLOPS | Progress: (0/10) | ")
    assert lines[2].startswith("[Task  1/12]  Current/Best:    4.00/   3.00 GFLOPS | Progress: (3/10) | ")
    assert lines[2].endswith(" s Done.\n")


def test_si_prefix() -> None:
    assert format_si_prefix(3e9, "G") == 3.0
    assert format_si_prefix(3.0, " ") == 3.0
    assert format_si_prefix(3e-3, "m") == pytest.approx(3.0)
    with pytest.raises(TuneError, match="Invalid SI prefix"):
        format_si_prefix(1, "X")


class ListDatabase:
    """The smallest database: keeps every saved record, in order, as encoded lines."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def save(self, inp: MeasureInput, res: MeasureResult) -> None:
        self.lines.append(encode(inp, res))


def test_log_to_database_saves_every_record() -> None:
    db = ListDatabase()
    inputs, results = batch()
    log_to_database(db)(None, inputs, results)
    assert db.lines == [encode(i, r) for i, r in zip(inputs, results, strict=True)]


def test_progress_bar_says_done_once() -> None:
    import gc

    out = io.StringIO()
    bar = progress_bar(3, out=out)
    bar.done()
    del bar  # finished explicitly: garbage collection writes nothing more
    gc.collect()
    assert out.getvalue().endswith("Progress: (0/3) | 0.00 s Done.\n") and out.getvalue().count("Done.") == 1
    out = io.StringIO()
    bar = progress_bar(3, out=out)
    del bar  # TVM's way: the line is finished when the callback is collected
    gc.collect()
    assert out.getvalue().count(" Done.\n") == 1


def test_log_to_file_streams_one_record_per_on_result(tmp_path) -> None:
    # Tuner.tune calls on_result as each measurement finishes; the batch call stays TVM's.
    path = tmp_path / "s.log"
    cb = log_to_file(path)
    inputs, results = batch()
    cb.on_result(None, inputs[2], results[2])
    assert [inp.config.index for inp, _ in load_from_file(path)] == [2]
    cb(None, inputs[:2], results[:2])
    assert [inp.config.index for inp, _ in load_from_file(path)] == [2, 0, 1]
