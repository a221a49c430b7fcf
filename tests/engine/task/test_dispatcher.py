"""Dispatch contexts: apply a config, the best of logs, or a fallback with one warning."""

from __future__ import annotations

import io
import logging

import pytest

from tunecli.engine.log.history_best import ApplyHistoryBest
from tunecli.engine.log.record import encode
from tunecli.engine.measure.result import MeasureErrorNo, MeasureInput, MeasureResult
from tunecli.engine.target import Target
from tunecli.engine.task.dispatcher import (
    ApplyConfig,
    DispatchContext,
    FallbackContext,
    clear_fallback_cache,
)
from tunecli.engine.task.fallback_config import FallbackConfigEntity
from tunecli.engine.task.scope import GLOBAL_SCOPE
from tunecli.engine.task.space import ConfigSpace
from tunecli.engine.task.task import Task
from tunecli.errors import TuneError

WORKLOAD = ("autotvm_test/matmul", 128, 128, 128, "float32")


def sample_space() -> ConfigSpace:
    cfg = ConfigSpace()
    cfg.define_split("tile_y", 128, num_outputs=2)
    cfg.define_split("tile_x", 128, num_outputs=2)
    return cfg


def records(target: str = "llvm") -> list[tuple[MeasureInput, MeasureResult]]:
    space = sample_space()
    task = Task(WORKLOAD[0], WORKLOAD[1:])
    tgt = Target(target)
    out = []
    for index, cost, err in [(0, 3.0, 0), (1, 2.0, 0), (2, 1.0, 0), (3, 0.5, MeasureErrorNo.RUNTIME_DEVICE),
                             (4, 1.0, 0)]:
        out.append((MeasureInput(tgt, task, space.get(index)), MeasureResult((cost,), err, cost, 0.0)))
    return out


def test_apply_config_answers_every_query() -> None:
    cfg = sample_space().get(3)
    with ApplyConfig(cfg) as ctx:
        assert DispatchContext.current.query(None, ("x",)) is cfg
        assert ctx.workload == ("x",)
    assert isinstance(DispatchContext.current, FallbackContext)


def test_history_best_picks_smallest_cost_ignoring_errors_and_keeping_the_first_tie() -> None:
    best = ApplyHistoryBest(records())
    with Target("llvm"):
        cfg = best.query(Target.current(), WORKLOAD)
    assert str(cfg) == str(sample_space().get(2))
    assert set(best.best_by_targetkey) == {("cpu", WORKLOAD)}
    assert best.best_by_model == {}


def test_history_best_loads_paths_files_and_nested_iterables(tmp_path) -> None:
    lines = "".join(encode(inp, res) + "\n" for inp, res in records())
    path = tmp_path / "a.log"
    path.write_text("# comment\n\n" + lines)
    for source in (str(path), path, [path], zip([str(path)]), io.StringIO(lines), [records()]):
        best = ApplyHistoryBest(source)
        assert best.best_by_targetkey[("cpu", WORKLOAD)][0].config.index == 2


def test_history_best_by_model_and_user_update() -> None:
    best = ApplyHistoryBest(records("llvm -model=rk3399"))
    target = Target("llvm -model=rk3399")
    assert best.query(target, WORKLOAD).index == 2
    assert ("rk3399", WORKLOAD) in best.best_by_model
    mine = sample_space().get(7)
    best.update(target, WORKLOAD, mine)
    assert best.query(target, WORKLOAD) is mine and mine.cost == 0


def test_history_best_needs_a_target() -> None:
    with ApplyHistoryBest(records()), pytest.raises(TuneError, match="Need a target context"):
        DispatchContext.current.query(None, WORKLOAD)


def test_unknown_workload_falls_back_with_one_warning(caplog) -> None:
    workload = ("testing/dispatch_fallback", 2, 3)
    DispatchContext.warning_messages.discard(
        f"Cannot find config for target=None, workload={workload}. A fallback configuration is used, "
        "which may bring great performance regression.")
    caplog.set_level(logging.WARNING, logger="autotvm")
    first = DispatchContext.current.query(None, workload)
    second = DispatchContext.current.query(None, workload)
    assert isinstance(first, FallbackConfigEntity) and first is second
    messages = [r.getMessage() for r in caplog.records if r.name == "autotvm"]
    assert messages == ["Cannot find config for target=None, workload=('testing/dispatch_fallback', 2, 3). "
                        "A fallback configuration is used, which may bring great performance regression."]
    clear_fallback_cache(None, workload)
    assert DispatchContext.current.query(None, workload) is not first


def test_history_best_delegates_unknown_workloads_to_the_fallback(caplog) -> None:
    caplog.set_level(logging.WARNING, logger="autotvm")
    with ApplyHistoryBest(records()), Target("llvm -mcpu=generic"):
        cfg = DispatchContext.current.query(Target.current(), ("testing/other", 7))
    assert isinstance(cfg, FallbackConfigEntity)
    assert any("target=llvm -mcpu=generic, workload=('testing/other', 7)" in r.getMessage()
               for r in caplog.records)


def test_silent_scope_suppresses_the_warning(caplog) -> None:
    caplog.set_level(logging.WARNING, logger="autotvm")
    GLOBAL_SCOPE.silent = True
    try:
        DispatchContext.current.query(Target("llvm"), ("testing/silent", 1))
    finally:
        GLOBAL_SCOPE.silent = False
    assert not caplog.records


def test_history_best_of_a_real_tophub_log() -> None:
    from tests.engine.autotvm_templates import tophub_dir
    from tunecli.engine.log.record import load_from_file

    path = tophub_dir() / "llvm_v0.04.log"
    first_inp, _ = next(iter(load_from_file(path)))
    with ApplyHistoryBest(str(path)), Target("llvm -mcpu=skylake-avx512"):
        cfg = DispatchContext.current.query(Target.current(), first_inp.task.workload)
    assert cfg.index == 193
    assert cfg["tile_ow"].size == [14, 8] and cfg["unroll_kw"].val is False
    vta = ApplyHistoryBest(tophub_dir() / "vta_v0.10.log")
    assert vta.best_by_model and all(key[0] != "unknown" for key in vta.best_by_model)
    assert {key[0] for key in vta.best_by_targetkey} == {"cpu", "arm_cpu"}  # vta and pynq arm_cpu rows
