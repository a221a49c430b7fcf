"""A kernel job's ``conv2d_nchw_blocked.x86`` / ``conv2d_nchw_winograd.x86`` task shares the knobs
and space of ``conv2d_NCHWc.x86`` / ``conv2d_NCHWc_winograd.x86``: a log's records of that twin
template for the same convolution answer it after its own records, saying so; a twin record of
another shape never answers as a record (at most as the nearest record); a package's twin records
do not serve."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from tunecli.engine.build import build
from tunecli.engine.log.history_best import ApplyHistoryBest, pretuned_packages
from tunecli.engine.log.nearest_record import nearest_config
from tunecli.engine.measure.result import MeasureInput, MeasureResult
from tunecli.engine.ops import reference as ref
from tunecli.engine.ops.x86.conv2d_nchw_blocked import BLOCKED, WINOGRAD, twin_workload, weight_for_kernel
from tunecli.engine.target import Target
from tunecli.engine.task.config_source import ConfigSource, config_source
from tunecli.engine.task.dispatcher import DispatchContext
from tunecli.engine.task.task import create

HOST = Target(f"llvm -mcpu={Target('llvm').llvm_cpu}")
#: N, H, W, CI, CO, KH, KW, stride, padding, dilation, dtype: a small 3x3 stride-2 convolution
ARGS = (1, 14, 14, 16, 32, 3, 3, 2, 1, 1, "float32")


def query(workload: tuple, records: object = None, target: Target = HOST, **kw: object):
    with ApplyHistoryBest(records, **kw):
        return DispatchContext.current.query(target, workload)


def record_of(name: str, args: tuple, index: int, cost: float = 1e-3) -> tuple:
    task = create(name, args, HOST)
    return MeasureInput(HOST, task, task.config_space.get(index)), MeasureResult([cost], 0, 0.1, 0.0)


def test_the_twin_is_the_same_convolution_in_nchwcs_workload_form():
    assert twin_workload((BLOCKED, *ARGS)) == (
        "conv2d_NCHWc.x86", ("TENSOR", (1, 16, 14, 14), "float32"), ("TENSOR", (32, 16, 3, 3), "float32"),
        (2, 2), (1, 1, 1, 1), (1, 1), "NCHW", "NCHW", "float32")
    asymmetric = twin_workload((WINOGRAD, 1, 8, 8, 8, 8, 3, 3, 1, (1, 0), 1, "float32"))
    assert asymmetric[0] == "conv2d_NCHWc_winograd.x86" and asymmetric[4] == (1, 0, 1, 0)
    assert twin_workload(("conv2d_nchw.x86", *ARGS)) is None
    assert twin_workload((BLOCKED, *ARGS[:7], "two", 1, 1, "float32")) is None  # malformed: none
    assert twin_workload(None) is None


def test_a_nchwc_record_of_the_same_convolution_serves_the_blocked_task_and_says_so():
    twin = twin_workload((BLOCKED, *ARGS))
    last = create(twin[0], twin[1:], HOST).config_space.range_length - 1
    cfg = query((BLOCKED, *ARGS), records=[record_of(twin[0], twin[1:], last)], pretuned=False)
    assert cfg.index == last
    source = config_source(cfg)
    assert source.kind == "log"
    assert source.detail.startswith("conv2d_NCHWc.x86(float32[1,16,14,14], float32[32,16,3,3], (2,2)")
    assert str(create(BLOCKED, ARGS, HOST).config_space.get(last)) == str(cfg)  # the same space


def test_a_nchwc_record_of_another_shape_is_no_record_of_the_task():
    other = twin_workload((BLOCKED, *ARGS[:3], 24, *ARGS[4:]))  # 24 input channels, not 16
    records = [record_of(other[0], other[1:], 3)]
    without_nearest = query((BLOCKED, *ARGS), records=records, pretuned=False, nearest=False)
    assert config_source(without_nearest).kind == "default" and without_nearest.is_fallback
    # on this CPU it is a nearest-record candidate, in the twin's form
    nearest = query((BLOCKED, *ARGS), records=records, pretuned=False)
    assert config_source(nearest).kind == "nearest"
    assert "conv2d_NCHWc.x86(float32[1,24,14,14]" in config_source(nearest).detail
    assert create(BLOCKED, ARGS, HOST).config_space.is_index_valid(nearest.index)


def test_the_tasks_own_record_answers_before_a_faster_twin_record():
    twin = twin_workload((BLOCKED, *ARGS))
    own = record_of(BLOCKED, ARGS, 2, cost=5e-3)
    faster_twin = record_of(twin[0], twin[1:], 7, cost=1e-4)
    cfg = query((BLOCKED, *ARGS), records=[faster_twin, own], pretuned=False)
    assert cfg.index == 2 and config_source(cfg).detail == ""
    # and an enclosing context's own record before this context's twin record
    with ApplyHistoryBest([own], pretuned=False), ApplyHistoryBest([faster_twin], pretuned=False):
        assert DispatchContext.current.query(HOST, (BLOCKED, *ARGS)).index == 2


def test_the_twins_record_is_left_as_it_was():
    twin = twin_workload((BLOCKED, *ARGS))
    record = record_of(twin[0], twin[1:], 4)
    with ApplyHistoryBest([record], pretuned=False) as history:
        served = history.query(HOST, (BLOCKED, *ARGS))
        own = history.query(HOST, twin)
    assert served is not own and config_source(own).detail == ""


@pytest.mark.parametrize("layer", [
    (BLOCKED, (1, 56, 56, 64, 64, 1, 1, 1, 0, 1, "float32")),
    (WINOGRAD, (1, 28, 28, 128, 128, 3, 3, 1, 1, 1, "float32")),
])
def test_a_packages_twin_records_do_not_serve(layer):
    """A package's records were measured writing the blocked layout, for a network's neighbours."""
    name, args = layer
    twin = twin_workload((name, *args))
    package = pretuned_packages(Target("llvm"))[-1]
    with Target("llvm"):
        assert config_source(package.query(Target("llvm"), twin)).kind == "package"
    cfg = query((name, *args), target=Target("llvm"))
    assert config_source(cfg).kind in ("default", "nearest")
    assert "conv2d_NCHWc" not in config_source(cfg).detail


def test_a_logged_twin_config_serving_the_winograd_task_builds_and_equals_numpy():
    args = (1, 14, 14, 32, 32, 3, 3, 1, 1, 1, "float32")
    twin = twin_workload((WINOGRAD, *args))
    space = create(twin[0], twin[1:], HOST).config_space
    index = next(i for i in range(space.range_length) if space.is_index_valid(i)
                 and space.get(i)["tile_m"].val == 2 and space.get(i)["tile_p"].val == 3)
    cfg = query((WINOGRAD, *args), records=[record_of(twin[0], twin[1:], index)], pretuned=False)
    assert config_source(cfg).kind == "log" and cfg.index == index
    task = create(WINOGRAD, args, "llvm")
    with task.target:
        sch, tensors = task.instantiate(cfg)
    mod = build(sch, tensors, target="llvm")
    rng = np.random.default_rng(0)
    data = rng.standard_normal((1, 32, 14, 14)).astype("float32")
    weight = rng.standard_normal((32, 32, 3, 3)).astype("float32")
    out = np.zeros((1, 32, 14, 14), dtype="float32")
    mod(data, weight_for_kernel(WINOGRAD, weight, [int(d) for d in tensors[1].shape]), out)
    np.testing.assert_allclose(out, ref.conv2d_nchw_python(data, weight, 1, 1), rtol=1e-4, atol=1e-3)


def test_nearest_config_compares_twin_records_in_the_twins_form():
    other = twin_workload((BLOCKED, *ARGS[:4], 48, *ARGS[5:]))
    task = create(other[0], other[1:], HOST)
    with ApplyHistoryBest([record_of(other[0], other[1:], 1)], pretuned=False) as history:
        refs = history.references()
    cfg = nearest_config(HOST, (BLOCKED, *ARGS), refs)
    assert cfg is not None and cfg.source.kind == "nearest"
    assert "float32[48,16,3,3]" in cfg.source.detail
    assert task.config_space.get(1)["unroll_kw"].val == cfg["unroll_kw"].val
    packaged = [replace(r, origin=ConfigSource("package", "llvm.log")) for r in refs]
    assert nearest_config(HOST, (BLOCKED, *ARGS), packaged) is None
