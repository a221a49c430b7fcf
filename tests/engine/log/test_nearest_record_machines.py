"""Whose records a workload without a record may take its config from: this CPU's first; when none
of them is comparable, another x86 CPU's of the same vector width and fused multiply-add (the
source says which CPU); never across vector widths or to a CPU whose features are unknown.  Among
the nearest workloads, the knobs' extents never outweigh a differing stride; a Winograd record's
tiles carry over only to an output of its size."""

from __future__ import annotations

import pytest

from tunecli.engine.log.history_best import ApplyHistoryBest
from tunecli.engine.log.nearest_record import (
    Reference,
    knob_distance,
    nearest_config,
    same_extents,
    workload_distance,
)
from tunecli.engine.log.record_machine import SAME_CPU, SAME_ISA, isa_class, machine_rank, same_machine
from tunecli.engine.target import Target
from tunecli.engine.task.config_source import ConfigSource, config_source
from tunecli.engine.task.dispatcher import DispatchContext
from tunecli.engine.task.fallback_config import FallbackConfigEntity
from tunecli.engine.task.task import create

CONV = "conv2d_NCHWc.x86"
ZEN4, ZEN5 = Target("llvm -mcpu=znver4"), Target("llvm -mcpu=znver5")
#: An AVX-512 CPU the shipped package has no records of (it holds Zen 4's and Zen 5's).
SKYLAKE_X = Target("llvm -mcpu=skylake-avx512")
HASWELL, SANDY = Target("llvm -mcpu=haswell"), Target("llvm -mcpu=sandybridge")


#: No user package directory: the shipped package alone answers.
pytestmark = pytest.mark.usefixtures("shipped_package_only")


def conv(channels: int, size: int, out: int | None = None, stride: int = 1) -> tuple:
    return (CONV, ("TENSOR", (1, channels, size, size), "float32"),
            ("TENSOR", (out or channels, channels, 3, 3), "float32"), (stride, stride), (1, 1, 1, 1), (1, 1),
            "NCHW", "NCHW", "float32")


def reference(target: Target, workload: tuple, index: int = 0, cost: float = 1e-3) -> Reference:
    config = create(workload[0], workload[1:], target).config_space.get(index)
    return Reference(target, workload, config, cost, ConfigSource("log", "mine.log"))


def query(workload: tuple, target: Target):
    with ApplyHistoryBest(None):
        return DispatchContext.current.query(target, workload)


def test_cpus_of_one_vector_width_and_fma_share_a_class_and_others_do_not():
    assert isa_class(ZEN4) == isa_class(ZEN5) == isa_class(Target("llvm -mcpu=skylake-avx512"))
    assert isa_class(HASWELL) == isa_class(Target("llvm -mcpu=znver3")) != isa_class(ZEN4)
    assert isa_class(SANDY) != isa_class(HASWELL)  # AVX without FMA
    # -mattr takes features away and adds them
    assert isa_class(Target("llvm -mcpu=znver4 -mattr=-avx512f")) == isa_class(HASWELL)
    assert isa_class(Target("llvm -mcpu=haswell -mattr=+avx512f")) == isa_class(ZEN4)
    assert isa_class(Target("llvm -mcpu=some-future-cpu")) is None
    assert isa_class(Target("cuda -arch=sm_80")) is None


def test_a_record_stands_in_on_the_same_cpu_first_then_on_its_class_and_never_across_widths():
    assert same_machine(ZEN4, Target(str(ZEN4))) and machine_rank(ZEN4, Target(str(ZEN4))) == SAME_CPU
    assert not same_machine(ZEN4, ZEN5) and machine_rank(ZEN4, ZEN5) == SAME_ISA
    assert machine_rank(ZEN4, HASWELL) is None and machine_rank(HASWELL, ZEN4) is None
    assert machine_rank(Target("llvm -mcpu=znver3"), SANDY) is None
    assert machine_rank(Target("llvm -mcpu=some-future-cpu"), Target("llvm -mcpu=other-future-cpu")) is None
    assert machine_rank(Target("cuda -arch=sm_80"), Target("cuda -arch=sm_90")) is None
    assert machine_rank(Target("llvm -device=arm_cpu -model=rk3399 -mtriple=aarch64-linux-gnu"),
                        Target("llvm -device=arm_cpu -model=bcm2837 -mtriple=aarch64-linux-gnu")) is None


def test_an_avx512_cpu_without_records_takes_another_avx512_cpus_and_says_which():
    workload = conv(64, 16)  # ResNet-18 at 64x64: no package has its first 3x3 layers
    cfg = query(workload, SKYLAKE_X)
    source = config_source(cfg)
    assert source.kind == "nearest" and "measured on znver" in source.detail and "llvm.log" in source.detail
    assert create(CONV, workload[1:], SKYLAKE_X).config_space.is_index_valid(cfg.index)
    same_cpu = query(workload, ZEN4)  # a record of the query's own CPU names no CPU
    assert config_source(same_cpu).kind == "nearest" and "measured on" not in same_cpu.source.detail


def test_an_avx2_cpu_takes_avx2_records_and_never_avx512_ones():
    workload = conv(64, 16)
    haswell = config_source(query(workload, HASWELL))
    assert haswell.kind == "nearest" and "measured on znver3" in haswell.detail
    assert config_source(query(workload, Target("llvm -mcpu=znver4 -mattr=-avx512f"))).detail.endswith(
        "measured on znver3)")
    assert config_source(query(workload, SANDY)).kind == "default"  # no package CPU of its class


def test_this_cpus_records_come_before_a_nearer_record_of_another_cpu():
    workload = conv(64, 16)
    far_mine = reference(ZEN5, conv(256, 56))
    near_other = reference(ZEN4, conv(64, 16, out=72))
    cfg = nearest_config(ZEN5, workload, [near_other, far_mine])
    assert "float32[1,256,56,56]" in cfg.source.detail and "measured on" not in cfg.source.detail
    only_other = nearest_config(ZEN5, workload, [near_other, reference(HASWELL, conv(64, 16))])
    detail = only_other.source.detail
    assert "float32[72,64,3,3]" in detail and "measured on znver4" in detail
    assert nearest_config(ZEN5, workload, [reference(HASWELL, conv(64, 16, out=72))]) is None


def test_the_knobs_extents_never_outweigh_a_differing_stride():
    # (1,64,24,24) -> 128, 3x3 stride 2: the 64->128 stride-2 record is much nearer than the
    # 64->64 stride-1 one, whose knobs happen to split extents a little closer
    workload = conv(64, 24, out=128, stride=2)
    strided, unstrided = conv(64, 56, out=128, stride=2), conv(64, 24)
    assert workload_distance(workload, strided) + 4 < workload_distance(workload, unstrided)
    space = create(CONV, workload[1:], ZEN5).config_space
    assert knob_distance(space, create(CONV, unstrided[1:], ZEN5).config_space) < knob_distance(
        space, create(CONV, strided[1:], ZEN5).config_space)
    for refs in ([reference(ZEN5, strided), reference(ZEN5, unstrided)],
                 [reference(ZEN5, unstrided), reference(ZEN5, strided)]):
        cfg = nearest_config(ZEN5, workload, refs)
        assert "float32[128,64,3,3]" in cfg.source.detail, cfg.source.detail


def winograd(channels: int, size: int) -> tuple:
    return ("conv2d_NCHWc_winograd.x86",) + conv(channels, size)[1:]


@pytest.mark.parametrize("channels, size", [(512, 2), (512, 4)])
def test_a_winograd_record_of_another_output_size_leaves_the_tiles_to_the_fallback(channels: int, size: int):
    # the 7x7 record's 6 tiles per register tile of F(4x4) would repeat the one tile of a 2x2 output
    # six times (4x slower than the fallback measured, 2x at 4x4)
    workload = winograd(channels, size)
    cfg = query(workload, ZEN4)
    assert config_source(cfg).kind == "nearest" and "float32[1,512,7,7]" in cfg.source.detail
    fallback = FallbackConfigEntity()
    create(workload[0], workload[1:], ZEN4).instantiate(fallback)
    assert (cfg["tile_p"].val, cfg["tile_m"].val) == (fallback["tile_p"].val, fallback["tile_m"].val)
    assert cfg.source.detail.endswith("(package in llvm.log; tile_m, tile_p of the fallback)")


def test_a_winograd_record_of_the_same_output_size_gives_its_tiles():
    workload = winograd(384, 7)
    cfg = query(workload, ZEN4)
    assert config_source(cfg).kind == "nearest" and "float32[1,512,7,7]" in cfg.source.detail
    assert (cfg["tile_p"].val, cfg["tile_m"].val) == (6, 4)  # the znver4 record's, not the fallback's (4, 2)
    assert "of the fallback" not in cfg.source.detail
    assert same_extents(workload, winograd(512, 7)) and not same_extents(workload, winograd(384, 14))
    assert not same_extents(workload, conv(384, 7))  # another template
    assert not same_extents(workload, winograd(384, 7)[:3] + ((2, 2),) + workload[4:])
