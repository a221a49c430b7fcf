"""``record.encode``/``decode`` with TVM's two protocols: ``json`` (the log line) and ``pickle``
(base64 of a pickle of the same plain values; a pickle naming any class is refused, so decoding
a line runs no code)."""

from __future__ import annotations

import base64
import pickle

import pytest

from tunecli.autotvm.measure import MeasureErrorNo, MeasureInput, MeasureResult
from tunecli.autotvm.record import decode, encode, load_from_file, measure_str_key
from tunecli.errors import RecordError
from tunecli.testing.autotvm import get_sample_task


def sample(index: int, costs: tuple[float, ...]) -> tuple[MeasureInput, MeasureResult]:
    task, target = get_sample_task(32)
    return (MeasureInput(target, task, task.config_space.get(index)),
            MeasureResult(costs, MeasureErrorNo.NO_ERROR, 0.7, 1234.5))


@pytest.mark.parametrize("protocol", ["json", "pickle"])
def test_a_record_survives_encoding(protocol: str) -> None:
    inp, res = sample(5, (3e-4, 2.5e-4, 2.75e-4))
    inp2, res2 = decode(encode(inp, res, protocol=protocol), protocol=protocol)
    assert measure_str_key(inp2) == measure_str_key(inp)
    assert inp2.config.index == 5
    assert (res2.costs, res2.error_no) == (res.costs, res.error_no)
    assert (res2.all_cost, res2.timestamp) == (0.7, 1234.5)


def test_a_pickle_line_is_one_line_of_base64() -> None:
    line = encode(*sample(1, (1e-3,)), protocol="pickle")
    assert "\n" not in line and base64.b64decode(line, validate=True)


class Hostile:
    def __reduce__(self) -> tuple:
        return (print, ("ran",))


def test_a_pickle_naming_a_class_is_refused() -> None:
    line = base64.b64encode(pickle.dumps({"input": Hostile()})).decode()
    with pytest.raises(RecordError, match="builtins.print"):
        decode(line, protocol="pickle")


def test_an_unknown_protocol_is_refused() -> None:
    with pytest.raises(RecordError, match="protocol"):
        encode(*sample(0, (1e-3,)), protocol="yaml")


def test_records_of_zero_seconds_are_read_back(tmp_path: object) -> None:
    path = tmp_path / "zero.log"
    pairs = [sample(i, (float(i),)) for i in range(3)]
    path.write_text("".join(encode(inp, res) + "\n" for inp, res in pairs))
    assert [res.costs for _, res in load_from_file(str(path))] == [(0.0,), (1.0,), (2.0,)]
