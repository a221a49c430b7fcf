"""The public ``tunecli.autotvm`` modules expose TVM's names, bound to the engine objects."""

from __future__ import annotations

from tunecli import autotvm
from tunecli.autotvm import callback, env, record, task, tuner
from tunecli.autotvm.task import space
from tunecli.engine.log import history_best
from tunecli.engine.task import space as engine_space
from tunecli.engine.task import task as engine_task
from tunecli.engine.tuner import xgb_tuner


def test_tvm_names_are_the_engine_objects() -> None:
    assert autotvm.template is engine_task.template
    assert autotvm.task.create is engine_task.create
    assert autotvm.get_config is engine_task.get_config
    assert autotvm.apply_history_best is history_best.ApplyHistoryBest
    assert autotvm.ConfigSpace is space.ConfigSpace is engine_space.ConfigSpace
    assert tuner.XGBTuner is xgb_tuner.XGBTuner
    assert tuner.callback is callback
    assert record.pick_best is history_best.pick_best
    assert env.GLOBAL_SCOPE is autotvm.GLOBAL_SCOPE
    assert task.ConfigEntity is engine_space.ConfigEntity
    assert {"log_to_file", "progress_bar", "Monitor"} <= set(callback.__all__)
    measure_names = {"measure_option", "LocalBuilder", "LocalRunner", "RPCRunner", "MeasureInput"}
    assert measure_names <= set(autotvm.__all__)
    assert autotvm.tophub.context is history_best.tophub_context


def test_virtual_axis_of_an_itervar_takes_its_name_and_extent() -> None:
    from tunecli.engine import te

    A = te.placeholder((12, 5), name="A")
    B = te.compute((12, 5), lambda i, j: A[i, j] * 2.0, name="B")
    axis = space.ConfigSpace.axis(B.op.axis[0])
    assert (axis.name, axis.length) == ("i", 12)
    cfg = space.ConfigSpace()
    cfg.define_split("tile_j", B.op.axis[1], num_outputs=2)
    assert repr(cfg.space_map["tile_j"]) == "Split(policy=factors, product=5, num_outputs=2) len=2"


def test_built_in_templates_are_reachable_from_the_public_api() -> None:
    from tunecli import autotvm

    task = autotvm.task.create("dense.x86", args=(16, 32, 16, "float32"), target="llvm")
    assert task.flop == 2 * 16 * 32 * 16 and len(task.config_space) > 1
