"""TVM's module paths of the autotvm names a ported script imports, and TVM's exception classes:
space and FLOP-counting errors are ``RuntimeError``\\ s (TVM scripts catch those) and still
``TuneError``\\ s (tunecli's commands report those)."""

from __future__ import annotations

import importlib

import pytest

from tunecli import te
from tunecli.errors import TuneError


@pytest.mark.parametrize(("module", "names"), [
    ("tunecli.autotvm.task.task", ["compute_flop", "Task", "create", "template", "serialize_args"]),
    ("tunecli.autotvm.measure.measure", ["MeasureErrorNo", "MeasureInput", "MeasureResult", "Runner"]),
    ("tunecli.autotvm.tuner.xgboost_cost_model", ["XGBoostCostModel"]),
    ("tunecli.autotvm.record", ["ApplyHistoryBest", "encode", "decode", "measure_str_key"]),
    ("tunecli.testing.autotvm", ["DummyRunner", "get_sample_task", "get_sample_records"]),
    ("tunecli.contrib.utils", ["tempdir"]),
])
def test_a_tvm_module_path_holds_its_names(module: str, names: list[str]) -> None:
    mod = importlib.import_module(module)
    assert all(hasattr(mod, n) for n in names)


def test_the_face_names_are_the_engines_objects() -> None:
    from tunecli.autotvm.measure.measure import MeasureResult
    from tunecli.autotvm.task.task import compute_flop
    from tunecli.engine.measure.result import MeasureResult as EngineResult
    from tunecli.engine.task.flop import compute_flop as engine_flop
    assert MeasureResult is EngineResult and compute_flop is engine_flop


def test_a_copy_has_no_flop_and_says_so_as_a_runtime_error() -> None:
    from tunecli.autotvm.task.task import compute_flop
    src = te.placeholder((64,), name="src")
    copy = te.compute((64,), lambda i: src[i], name="copy")
    with pytest.raises(RuntimeError) as err:
        compute_flop(te.create_schedule(copy.op))
    assert isinstance(err.value, TuneError)


def test_an_infeasible_fallback_split_is_a_runtime_error() -> None:
    from tunecli.autotvm.task.space import FallbackConfigEntity
    cfg = FallbackConfigEntity()
    cfg.define_split("tile", cfg.axis(30), num_outputs=3)
    with pytest.raises(RuntimeError, match="tile"):
        cfg.fallback_split("tile", [-1, 4, 0])
    cfg.fallback_split("tile", [-1, 5, 3])
    assert cfg["tile"].size == [2, 5, 3]
