"""Tuning logs: TVM's v0.2 JSON lines (v0.1 read too), read tolerantly, written byte-identically."""

from __future__ import annotations

import io
import logging

import pytest

from tests.engine.autotvm_templates import tophub_dir
from tunecli.engine.log.history_best import pick_best
from tunecli.engine.log.record import (
    decode,
    encode,
    load_from_buffer,
    load_from_file,
    measure_str_key,
    split_workload,
)
from tunecli.engine.measure.result import MeasureErrorNo, MeasureInput, MeasureResult
from tunecli.engine.target import Target
from tunecli.engine.task.space import ConfigSpace
from tunecli.engine.task.task import Task
from tunecli.errors import RecordError


def sample_input(index: int = 0) -> MeasureInput:
    space = ConfigSpace()
    space.define_split("tile_y", 128, num_outputs=2)
    space.define_split("tile_x", 128, num_outputs=2)
    task = Task("testing/matmul", (128, 128, 128, "float32"))
    return MeasureInput(Target("llvm -keys=cpu"), task, space.get(index))


def test_encode_writes_tvm_014_format() -> None:
    line = encode(sample_input(), MeasureResult((0,), 0, 0, 0))
    assert line == ('{"input": ["llvm -keys=cpu", "testing/matmul", [128, 128, 128, "float32"], {}], '
                    '"config": {"index": 0, "code_hash": null, "entity": [["tile_y", "sp", [-1, 1]], '
                    '["tile_x", "sp", [-1, 1]]]}, "result": [[0], 0, 0, 0], "version": 0.2, '
                    '"tvm_version": "0.14.0"}')


def test_error_results_are_written_with_cost_1e9() -> None:
    res = MeasureResult(("Traceback ...", RuntimeError("boom")), MeasureErrorNo.COMPILE_HOST, 1.5, 7.0)
    line = encode(sample_input(3), res)
    assert '"result": [[1000000000.0], 2, 1.5, 7.0]' in line
    inp, back = decode(line)
    assert back.error_no == MeasureErrorNo.COMPILE_HOST and back.costs == (1e9,)


def test_decode_gives_hashable_tasks_and_config_cost() -> None:
    inp, res = decode(encode(sample_input(10), MeasureResult((0.5, 1.5), 0, 2.0, 3.0)))
    assert inp.task.workload == ("testing/matmul", 128, 128, 128, "float32")
    assert str(inp.config) == str(sample_input(10).config)
    assert inp.config.cost == 1.0
    assert res == MeasureResult((0.5, 1.5), MeasureErrorNo.NO_ERROR, 2.0, 3.0)
    assert inp.target.keys == ["cpu"]
    assert measure_str_key(inp) == ("llvm -keys=cpu" "testing/matmul(128, 128, 128, 'float32'){}"
                                    "[('tile_y', [-1, 4]), ('tile_x', [-1, 2])],None,10")


@pytest.mark.parametrize("name", ["llvm_v0.04.log", "vta_v0.10.log"])
def test_every_tophub_v02_record_writes_back_byte_identically(name: str) -> None:
    lines = [ln.rstrip("\n") for ln in (tophub_dir() / name).read_text().splitlines()
             if ln.strip() and not ln.startswith("#")]
    assert lines
    for line in lines:
        inp, res = decode(line)
        assert encode(inp, res) == line


def test_v01_records_decode_to_the_same_configs_as_v02() -> None:
    old = list(load_from_file(tophub_dir() / "llvm_v0.01.log"))
    new = list(load_from_file(tophub_dir() / "llvm_v0.04.log"))
    assert len(old) == len(new) == 35
    for (inp1, res1), (inp2, res2) in zip(old, new, strict=True):
        assert inp1.task.name == "topi_x86_conv2d_NCHWc"
        assert str(inp1.config) == str(inp2.config)
        assert res1 == res2
        assert str(inp1.target) == str(inp2.target)


def test_malformed_lines_are_skipped_first_of_each_kind_named_by_line(tmp_path, caplog) -> None:
    good = encode(sample_input(1), MeasureResult((1.0,), 0, 1.0, 0.0))
    good2 = encode(sample_input(2), MeasureResult((2.0,), 0, 1.0, 0.0))
    text = "\n".join(["# header", good, "", "garbage here", good[:40], '{"input": []}', good2, "  "]) + "\n"
    path = tmp_path / "bad.log"
    path.write_text(text)
    caplog.set_level(logging.WARNING, logger="autotvm")
    pairs = list(load_from_file(path))
    assert [inp.config.index for inp, _ in pairs] == [1, 2]
    warnings = [r.getMessage() for r in caplog.records]
    assert [w.split(": skipping")[0] for w in warnings[:2]] == [f"{path}:4", f"{path}:6"]
    assert warnings[2] == f"{path}: skipped 1 more line of the same kind (not JSON): line 5"
    assert len(warnings) == 3
    assert [inp.config.index for inp, _ in load_from_buffer(io.StringIO(text))] == [1, 2]


def test_a_line_of_binary_garbage_is_skipped_and_the_rest_is_read(tmp_path, caplog) -> None:
    good = encode(sample_input(1), MeasureResult((1.0,), 0, 1.0, 0.0))
    good2 = encode(sample_input(2), MeasureResult((2.0,), 0, 1.0, 0.0))
    path = tmp_path / "binary.log"
    path.write_bytes(good.encode() + b"\n\x00\x01\xff\xfe\n" + good2.encode() + b"\n")
    caplog.set_level(logging.WARNING, logger="autotvm")
    assert [inp.config.index for inp, _ in load_from_file(path)] == [1, 2]
    assert [r.getMessage() for r in caplog.records] == [f"{path}:2: skipping a line that is not UTF-8 text"]


def test_decode_of_a_malformed_line_raises_record_error() -> None:
    with pytest.raises(RecordError, match="malformed record"):
        decode('{"input": ["llvm", "x", [], {}], "config": {"index": 0}}')


def test_missing_file_is_a_record_error(tmp_path) -> None:
    with pytest.raises(RecordError, match="cannot read log"):
        list(load_from_file(tmp_path / "nope.log"))


def test_pick_best_keeps_one_best_line_per_workload(tmp_path) -> None:
    in_file = tmp_path / "all.log"
    lines = [encode(sample_input(i), MeasureResult((c,), e, c, 0.0))
             for i, c, e in [(0, 3.0, 0), (1, 1.0, 0), (2, 0.1, 4), (3, 1.0, 0)]]
    other = Task("testing/matmul", (64, 64, 64, "float32"))
    space = ConfigSpace()
    space.define_split("tile_y", 64, num_outputs=2)
    space.define_split("tile_x", 64, num_outputs=2)
    lines.append(encode(MeasureInput(Target("llvm -keys=cpu"), other, space.get(5)),
                        MeasureResult((2.0,), 0, 2.0, 0.0)))
    in_file.write_text("\n".join(lines) + "\n")
    out_file = tmp_path / "best.log"
    assert pick_best(in_file, out_file) == 2
    assert out_file.read_text().splitlines() == [lines[1], lines[4]]
    buf = io.StringIO()
    pick_best(str(in_file), buf)
    assert buf.getvalue().splitlines() == [lines[1], lines[4]]


def test_pick_best_on_tophub_keeps_one_record_per_workload(tmp_path) -> None:
    out = tmp_path / "best.log"
    pick_best(tophub_dir() / "vta_v0.10.log", out)
    records = list(load_from_file(out))
    keys = [(str(inp.target), inp.task.workload) for inp, _ in records]
    assert len(keys) == len(set(keys)) > 0


def test_split_workload(tmp_path) -> None:
    path = tmp_path / "mixed.log"
    a = encode(sample_input(1), MeasureResult((1.0,), 0, 1.0, 0.0))
    a_again = encode(sample_input(1), MeasureResult((3.0,), 0, 1.0, 5.0))
    b = encode(MeasureInput(Target("llvm"), Task("testing/other", (1,)), ConfigSpace().get(0)),
               MeasureResult((2.0,), 0, 1.0, 0.0))
    path.write_text("\n".join([a, b, a_again]) + "\n")
    files = split_workload(path)
    assert [f.rsplit(".", 2)[-2] for f in files] == ["000", "001"]
    assert open(files[0]).read().splitlines() == [a]
    assert open(files[1]).read().splitlines() == [b]
    files = split_workload(path, clean=False)
    assert open(files[0]).read().splitlines() == [a, a_again]


def test_measure_result_repr_names_the_error() -> None:
    res = MeasureResult((0.0120379658,), MeasureErrorNo.NO_ERROR, 0.694, 1672653690.186004)
    assert repr(res) == ("MeasureResult(costs=(0.0120379658,), error_no=MeasureErrorNo.NO_ERROR, "
                         "all_cost=0.694, timestamp=1672653690.186004)")
    assert res == ((0.0120379658,), 0, 0.694, 1672653690.186004)


def _line(costs, error_no=0, index=1, all_cost=1.0, timestamp=0.0) -> str:
    import json

    row = json.loads(encode(sample_input(1), MeasureResult((1.0,), 0, 1.0, 0.0)))
    row["config"]["index"] = index
    row["result"] = [costs, error_no, all_cost, timestamp]
    return json.dumps(row)


@pytest.mark.parametrize(("line", "kind", "says"), [
    (_line([-1.0]), "bad cost", "cost -1.0 is not a non-negative number of seconds"),
    (_line([]), "bad cost", "a successful measurement has no costs"),
    (_line(["1"]), "bad cost", "cost '1' is not a non-negative"),
    (_line([1e-3, float("nan")]), "bad cost", "cost nan"),
    (_line([float("inf")]), "bad cost", "cost inf"),
    (_line(5.0), "bad cost", "costs 5.0 are not a list"),
    (_line([1.0], error_no=99), "bad error number", "error number 99 is not one of 0..8"),
    (_line([1.0], error_no="x"), "bad error number", "error number 'x'"),
    (_line([1.0], error_no=True), "bad error number", "error number True"),
    (_line([1.0], index="abc"), "bad config index", "config index 'abc' is not a non-negative integer"),
    (_line([1.0], index=-3), "bad config index", "config index -3"),
    (_line([1.0], index=1.5), "bad config index", "config index 1.5"),
    (_line([1.0], all_cost="x"), "not a record", "all_cost 'x'"),
    (_line([1.0], timestamp=None), "not a record", "timestamp None"),
    ("[1, 2]", "not a record", "a JSON value that is not a record"),
    ('{"input": 5}', "not a record", "malformed record"),
])
def test_records_no_measurement_could_write_are_refused(line: str, kind: str, says: str) -> None:
    with pytest.raises(RecordError, match="malformed record|not a record") as info:
        decode(line)
    assert info.value.kind == kind
    assert says in str(info.value)


def test_failed_records_keep_tvm_error_costs() -> None:
    inp, res = decode(_line([1e9], error_no=4))
    assert res.error_no == MeasureErrorNo.RUNTIME_DEVICE and inp.config.cost is None


def test_bad_records_are_skipped_and_named_once_per_kind(tmp_path, caplog) -> None:
    good = _line([1e-3])
    lines = [good, _line([-1.0]), _line([1.0], index="abc"), _line([-2.0]), _line([]),
             _line([1.0], error_no=99), good]
    path = tmp_path / "hostile.log"
    path.write_text("\n".join(lines) + "\n")
    caplog.set_level(logging.WARNING, logger="autotvm")
    assert len(list(load_from_file(path))) == 2
    messages = [r.getMessage() for r in caplog.records]
    assert messages == [
        f"{path}:2: skipping malformed record: cost -1.0 is not a non-negative number of seconds",
        f"{path}:3: skipping malformed record: config index 'abc' is not a non-negative integer",
        f"{path}:6: skipping malformed record: error number 99 is not one of 0..8",
        f"{path}: skipped 2 more lines of the same kind (bad cost): lines 4, 5",
    ]


def test_a_huge_line_is_skipped_unread_and_line_numbers_stay_right(tmp_path, caplog, monkeypatch) -> None:
    from tunecli.engine.log import record

    monkeypatch.setattr(record, "MAX_LINE_CHARS", 4096)
    good = _line([1e-3])
    path = tmp_path / "huge.log"
    path.write_text(good + "\n" + "x" * 100_000 + "\n" + good + "\n" + "y" * 5000)
    caplog.set_level(logging.WARNING, logger="autotvm")
    assert [r.line for r in record.read_log(path)] == [1, 3]
    assert [r.getMessage() for r in caplog.records] == [
        f"{path}:2: skipping a line longer than 4096 characters",
        f"{path}: skipped 1 more line of the same kind (too long): line 4"]


def test_a_directory_is_named_as_such(tmp_path) -> None:
    with pytest.raises(RecordError, match="is a directory, not a log file"):
        list(load_from_file(tmp_path))
