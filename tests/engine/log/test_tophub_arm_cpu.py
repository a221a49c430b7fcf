"""TVM's arm_cpu package (shipped as ``pretuned/arm_cpu_v0.08.log``) answers arm_cpu targets by
their board (``-model=``), as TVM's tophub does; x86 records never answer them."""

from __future__ import annotations

import logging

import pytest

from tunecli.engine.log import tophub
from tunecli.engine.log.history_best import ApplyHistoryBest, tophub_context
from tunecli.engine.target import Target
from tunecli.engine.task.config_source import config_source
from tunecli.engine.task.dispatcher import DispatchContext

RK3399 = "llvm -device=arm_cpu -model=rk3399 -mtriple=aarch64-linux-gnu -mattr=+neon"
RASP3B = "llvm -device=arm_cpu -model=bcm2837 -mtriple=armv7l-linux-gnueabihf -mattr=+neon"
#: ResNet-18's first convolution, as TVM's arm_cpu logs name its spatial-pack task.
FIRST_CONV = ("conv2d_nchw_spatial_pack.arm_cpu", ("TENSOR", (1, 3, 224, 224), "float32"),
              ("TENSOR", (64, 3, 7, 7), "float32"), (2, 2), (3, 3, 3, 3), (1, 1), "float32")


#: No user package directory: the shipped package alone answers.
pytestmark = pytest.mark.usefixtures("shipped_package_only")


def _logged_config(model: str, workload: tuple) -> str:
    """The config TVM's log holds for ``workload`` on the board ``model`` (read from the file)."""
    context = ApplyHistoryBest(str(tophub.SHIPPED_DIR / "arm_cpu_v0.08.log"), pretuned=False)
    return str(context.best_by_model[(model, workload)][0].config)


def test_an_arm_cpu_target_is_answered_by_the_arm_cpu_package_only():
    files = tophub.package_files(RK3399)
    assert [f.name for f in files] == ["arm_cpu_v0.08.log"]
    context = tophub_context(RK3399)
    assert all(key[0].keys[0] == "arm_cpu" for key in context.best_by_target)
    assert {key[0] for key in context.best_by_model} >= {"rk3399", "bcm2837", "kirin970", "snapdragon835"}


def test_an_arm_triple_without_a_device_is_answered_by_the_arm_cpu_package():
    """TVM's rule: the target's keys choose the package, and an arm64 triple gives the key arm_cpu."""
    snapdragon = "llvm -model=snapdragon835 -mtriple=arm64-linux-android -mattr=+neon"
    assert tophub.backend_names(snapdragon)[0] == "arm_cpu"
    assert [f.name for f in tophub.package_files(snapdragon)] == ["arm_cpu_v0.08.log"]
    assert [f.name for f in tophub.package_files("llvm -mtriple=x86_64-linux-gnu")] == ["llvm.log"]
    context = tophub_context(snapdragon)
    assert context.best_by_target and all(key[0].keys[0] == "arm_cpu" for key in context.best_by_target)


def test_each_board_gets_its_own_record():
    with tophub_context(RK3399):
        rk3399 = DispatchContext.current.query(Target(RK3399), FIRST_CONV)
    with tophub_context(RASP3B):
        rasp3b = DispatchContext.current.query(Target(RASP3B), FIRST_CONV)
    assert str(rk3399) == _logged_config("rk3399", FIRST_CONV)
    assert str(rasp3b) == _logged_config("bcm2837", FIRST_CONV)
    assert str(rk3399) != str(rasp3b)


def test_apply_history_best_falls_back_to_the_arm_cpu_package():
    with ApplyHistoryBest([]):
        cfg = DispatchContext.current.query(Target(RK3399), FIRST_CONV)
    assert not getattr(cfg, "is_fallback", False)
    assert str(cfg) == _logged_config("rk3399", FIRST_CONV)


def test_a_workload_without_records_gets_the_config_of_the_nearest_record_of_its_board():
    workload = FIRST_CONV[:1] + (("TENSOR", (1, 3, 97, 97), "float32"),) + FIRST_CONV[2:]
    with tophub_context(RK3399):
        cfg = DispatchContext.current.query(Target(RK3399), workload)
    assert config_source(cfg).kind == "nearest"
    assert "float32[1,3,224,224]" in cfg.source.detail and "arm_cpu_v0.08.log" in cfg.source.detail
    # rk3399's record splits 224x224's 112 output rows [56, 2]: 97x97's 49 rows take the nearest
    # factor of 49 (1), its channel tile (4) divides 64 and stays.
    assert cfg["tile_co"].size[-1] == 4 and cfg["tile_oh"].size[-1] == 1


def test_a_board_without_records_gets_the_fallback_with_the_usual_warning(caplog):
    board = RK3399.replace("rk3399", "unknownboard")
    workload = FIRST_CONV[:1] + (("TENSOR", (1, 3, 97, 97), "float32"),) + FIRST_CONV[2:]
    DispatchContext.warning_messages.clear()
    with caplog.at_level(logging.WARNING, logger="autotvm"), tophub_context(board):
        cfg = DispatchContext.current.query(Target(board), workload)
    assert cfg.is_fallback and config_source(cfg).kind == "default"
    messages = [r.getMessage() for r in caplog.records]
    assert any("Cannot find config" in m and "fallback" in m for m in messages)


def test_the_x86_package_still_answers_x86_targets():
    assert [f.name for f in tophub.package_files("llvm")] == ["llvm.log"]
    assert all("arm_cpu" not in key[0].keys for key in tophub_context("llvm").best_by_target)
