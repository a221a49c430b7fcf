"""Pre-tuned packages (TVM's tophub): which files answer for a target, and the dispatch fallback to them."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from tests.engine.autotvm_templates import tophub_dir
from tunecli.engine.build import build
from tunecli.engine.log import tophub
from tunecli.engine.log.best_of_logs import best_of_logs
from tunecli.engine.log.history_best import ApplyHistoryBest, tophub_context
from tunecli.engine.log.record import encode, load_from_file
from tunecli.engine.ops import registry
from tunecli.engine.target import Target
from tunecli.engine.task.dispatcher import DispatchContext
from tunecli.engine.task.workload_args import deserialize_args
from tunecli.errors import TuneError

#: No user package directory: the shipped package alone answers.
pytestmark = pytest.mark.usefixtures("shipped_package_only")


def conv_records():
    records = load_from_file(tophub_dir() / "llvm_v0.04.log")
    return [(inp, res) for inp, res in records if inp.task.name == "conv2d_NCHWc.x86"]


def touch(path: Path) -> Path:
    path.write_text("")
    return path


def test_package_files_follow_tvms_names(tmp_path: Path):
    first, second = tmp_path / "a", tmp_path / "b"
    first.mkdir()
    second.mkdir()
    touch(first / "llvm.log")
    versioned = touch(first / "llvm_v0.04.log")
    arm = touch(second / "arm_cpu.log")
    plain = touch(second / "llvm.log")
    assert tophub.package_files("llvm", [first, second]) == [versioned, plain]  # TVM's version first
    # TVM's rule: the device's backend alone answers an arm_cpu target (never the x86 llvm packages)
    assert tophub.package_files("llvm -device=arm_cpu", [first, second]) == [arm]
    aarch64 = "llvm -device=arm_cpu -mtriple=aarch64-linux-gnu"
    assert tophub.backend_names(aarch64) == ["arm_cpu", "cpu", "llvm"]
    assert tophub.package_files("cuda", [first, second]) == []


def test_locations_come_from_the_environment_or_set_locations(tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch):
    assert tophub.locations() == [tophub.SHIPPED_DIR]
    monkeypatch.setenv(tophub.ENV_VAR, str(tmp_path))
    assert tophub.locations() == [tmp_path, tophub.SHIPPED_DIR]
    monkeypatch.setenv(tophub.ENV_VAR, "NONE")
    assert tophub.locations() == []
    tophub.set_locations([tmp_path])
    assert tophub.locations() == [tmp_path, tophub.SHIPPED_DIR]
    tophub.set_locations("NONE")
    assert tophub.locations() == []
    with pytest.raises(TuneError, match="not a directory"):
        tophub.set_locations([tmp_path / "missing"])


def test_history_best_falls_back_to_the_package_before_the_fallback_config(tmp_path: Path):
    (inp, res), (other, other_res) = conv_records()[:2]
    own_log = tmp_path / "mine.log"
    own_log.write_text(encode(other, other_res) + "\n")
    target = Target("llvm")  # the package's records are for llvm -mcpu=skylake-avx512: matched by key
    tophub.set_locations("NONE")
    # nearest=False: on a machine of the records' CPU, another workload's record would be transferred
    with ApplyHistoryBest(str(own_log), nearest=False):
        assert DispatchContext.current.query(target, inp.task.workload).is_fallback
    tophub.set_locations([tophub_dir()])
    with ApplyHistoryBest(str(own_log)):
        cfg = DispatchContext.current.query(target, inp.task.workload)
        assert str(cfg) == str(inp.config) and not cfg.is_fallback
        assert DispatchContext.current.query(target, other.task.workload).index == other.config.index
    with ApplyHistoryBest(str(own_log), pretuned=False, nearest=False):
        assert DispatchContext.current.query(target, inp.task.workload).is_fallback
    other_cpu = Target("llvm -mcpu=haswell")  # no package has records of its CPU: the key's fastest
    with tophub_context(target):  # TVM's autotvm.tophub.context: the packages alone
        assert str(DispatchContext.current.query(other_cpu, inp.task.workload)) == str(inp.config)


def test_an_untuned_template_call_builds_with_the_pretuned_config():
    tophub.set_locations([tophub_dir()])
    inp, _ = conv_records()[9]  # 512 -> 512 channels, 3x3, 7x7 output
    template = registry.TEMPLATES["conv2d_NCHWc.x86"]
    with Target("llvm"), ApplyHistoryBest([]):
        sch, tensors = template(*deserialize_args(inp.task.args))
    ic_bn, oc_bn = inp.config["tile_ic"].size[-1], inp.config["tile_oc"].size[-1]
    assert tensors[0].shape[-1] == ic_bn and tensors[-1].shape[-1] == oc_bn
    mod = build(sch, tensors, target="llvm")
    rng = np.random.default_rng(1)
    inputs = [rng.standard_normal(t.shape).astype("float32") for t in tensors[:-1]]
    out = np.zeros(tensors[-1].shape, dtype="float32")
    mod(*inputs, out)
    want = registry.get_strategy("conv2d_NCHWc.x86").reference_for(*inp.task.args)(*inputs)
    np.testing.assert_allclose(out, want, rtol=1e-4, atol=2e-3)


def test_best_of_logs_writes_a_package(tmp_path: Path):
    package = tmp_path / "package"
    source = tmp_path / "logs"
    source.mkdir()
    shutil.copy(tophub_dir() / "llvm_v0.04.log", source / "tvm.log")
    best_of_logs([str(source / "tvm.log")], out=package / "llvm.log")
    tophub.set_locations([package])
    assert tophub.package_files("llvm")[0] == package / "llvm.log"  # before the shipped package
    target = Target("llvm -mcpu=znver3")
    with ApplyHistoryBest([]):
        for inp, _ in conv_records():
            assert str(DispatchContext.current.query(target, inp.task.workload)) == str(inp.config)


def test_the_first_package_answers_whatever_the_costs(tmp_path: Path):
    shipped = {i.task.workload for i, _ in load_from_file(tophub.SHIPPED_DIR / "llvm.log")}
    inp, res = next((i, r) for i, r in conv_records() if i.task.workload not in shipped)
    for name, cost, offset in (("first", 2.0, 0), ("second", 1.0, 1)):  # the second is cheaper
        (tmp_path / name).mkdir()
        record = json.loads(encode(inp, res))
        record["result"][0] = [cost]
        record["config"]["index"] += offset
        (tmp_path / name / "llvm.log").write_text(json.dumps(record) + "\n")
    tophub.set_locations([tmp_path / "first", tmp_path / "second"])
    with ApplyHistoryBest([]):
        assert DispatchContext.current.query(Target("llvm"), inp.task.workload).index == inp.config.index
    with tophub_context("llvm"):  # TVM's context merges the files: the cheaper record
        assert DispatchContext.current.query(Target("llvm"), inp.task.workload).index == inp.config.index + 1
