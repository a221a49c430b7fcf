"""ConfigSpace enumerates knobs exactly as TVM does: indices in TVM logs mean the same configs."""

from __future__ import annotations

import itertools
import math
import re
import time
from collections import OrderedDict

import numpy as np
import pytest

from tests.engine.autotvm_templates import SEED
from tunecli.engine.task.annotate_space import AnnotateSpace
from tunecli.engine.task.space import ConfigEntity, ConfigSpace
from tunecli.engine.task.space_entities import (
    ReorderSpace,
    SplitSpace,
    VirtualAxis,
    get_factors,
    get_pow2s,
    prime_factors,
)
from tunecli.engine.task.space_index import SpaceIndexError
from tunecli.errors import SpaceError


def split_sizes(length: int, n: int, policy: str = "factors", **kwargs) -> list[list[int]]:
    return [e.size for e in SplitSpace([VirtualAxis(length)], policy, num_outputs=n, **kwargs).entities]


def conv2d_tutorial_space() -> ConfigSpace:
    cfg = ConfigSpace()
    for name, length, n in [("tile_f", 512, 4), ("tile_y", 7, 4), ("tile_x", 7, 4), ("tile_rc", 512, 3),
                            ("tile_ry", 3, 3), ("tile_rx", 3, 3)]:
        cfg.define_split(name, length, num_outputs=n)
    cfg.define_knob("auto_unroll_max_step", [0, 512, 1500])
    cfg.define_knob("unroll_explicit", [0, 1])
    return cfg


def test_printed_space_matches_the_seed_text_exactly() -> None:
    seeds = sorted(SEED.glob("*.txt")) if SEED.is_dir() else []
    if not seeds:
        pytest.skip(f"seed text not found in {SEED}")
    text = seeds[0].read_text(encoding="utf-8")
    expected = re.search(r"ConfigSpace \(len=10454400, space_map=\n.*?\n\)", text, re.S).group(0)
    assert str(conv2d_tutorial_space()) == expected
    assert len(conv2d_tutorial_space()) == 10454400


def test_split_factors_enumerates_innermost_slowest_with_minus_one_first() -> None:
    assert split_sizes(8, 3) == [[-1, 1, 1], [-1, 2, 1], [-1, 4, 1], [-1, 8, 1], [-1, 1, 2], [-1, 2, 2],
                                 [-1, 4, 2], [-1, 1, 4], [-1, 2, 4], [-1, 1, 8]]
    assert split_sizes(7, 4) == [[-1, 1, 1, 1], [-1, 7, 1, 1], [-1, 1, 7, 1], [-1, 1, 1, 7]]


@pytest.mark.parametrize(("length", "n", "policy", "count"), [
    (512, 4, "factors", 220), (512, 3, "factors", 55), (256, 3, "factors", 45), (2**25, 4, "factors", 3276),
    (128, 2, "factors", 8), (7, 2, "factors", 2), (224, 3, "factors", 63), (12, 3, "factors", 18),
    (256, 3, "power2", 45), (224, 3, "power2", 36), (6, 2, "power2", 3), (6, 3, "power2", 6),
    (10, 2, "power2", 4), (256, 3, "verbose", 45), (224, 3, "verbose", 84), (6, 2, "verbose", 5),
])
def test_split_counts_match_tvm(length: int, n: int, policy: str, count: int) -> None:
    assert len(split_sizes(length, n, policy)) == count


def test_split_options() -> None:
    assert split_sizes(6, 2, "power2") == [[-1, 1], [-1, 2], [-1, 4]]
    assert len(split_sizes(8, 2, max_factor=4)) == 3
    assert split_sizes(12, 2, filter=lambda e: e.size[-1] >= 4) == [[-1, 4], [-1, 6], [-1, 12]]
    assert split_sizes(10, 2, "power2", no_tail=True) == [[-1, 1], [-1, 2]]
    assert split_sizes(9, 2, policy="candidate", candidate=[[3, 3], [1, 9]]) == [[3, 3], [1, 9]]
    with pytest.raises(SpaceError, match="invalid policy: nope"):
        split_sizes(8, 2, "nope")
    with pytest.raises(SpaceError, match="num_outputs"):
        SplitSpace([VirtualAxis(8)], "factors")


@pytest.mark.parametrize(("length", "order"), [
    (112, [32, 1, 2, 64, 4, 7, 8, 14, 16, 112, 56, 28]),
    (256, [32, 1, 2, 64, 4, 128, 256, 8, 16]),
    (224, [64, 1, 2, 128, 4, 7, 8, 14, 16, 28, 32, 224, 112, 56]),
    (6, [1, 2, 3, 4, 6]),
])
def test_verbose_uses_cpython_set_order(length: int, order: list[int]) -> None:
    assert SplitSpace([VirtualAxis(length)], "verbose", num_outputs=2).factors == order


def test_verbose_order_decodes_a_real_tvm_log_index() -> None:
    # x86 conv2d_NCHWc space of a TVM 0.10 log: tile_ow is a verbose split of 112, inner <= 64.
    cfg = ConfigSpace()
    cfg.define_split("tile_ic", 2, num_outputs=2)
    cfg.define_split("tile_oc", 64, num_outputs=2, filter=lambda y: y.size[-1] <= 64)
    cfg.define_split("tile_ow", 112, num_outputs=2, policy="verbose", filter=lambda y: y.size[-1] <= 64)
    cfg.define_knob("unroll_kw", [True, False])
    assert cfg.dims == [2, 7, 11, 2]
    assert cfg.get(172)["tile_ow"].size == [-1, 1]
    assert cfg.get(47)["tile_ow"].size == [-1, 64]


def test_factor_helpers() -> None:
    assert get_factors(12) == [1, 2, 3, 4, 6, 12]
    assert get_factors(1) == [1]
    for n in range(1, 2000):
        assert get_factors(n) == [d for d in range(1, n + 1) if n % d == 0]
    assert prime_factors(2**31 - 1) == [(2**31 - 1, 1)]
    assert prime_factors(735134400) == [(2, 6), (3, 3), (5, 2), (7, 1), (11, 1), (13, 1), (17, 1)]
    assert get_pow2s(6) == [1, 2, 4]
    assert get_pow2s(10) == [1, 2, 4, 8]
    assert get_pow2s(1) == [1]
    for helper in (get_factors, prime_factors, get_pow2s):
        with pytest.raises(SpaceError, match=f"{helper.__name__}: 0 is not a positive integer"):
            helper(0)


@pytest.mark.parametrize(("length", "n", "policy"), [
    (2**31 - 1, 4, "factors"),      # the largest prime an axis can have
    (2**31 - 1, 3, "verbose"),
    (2**30, 4, "verbose"),
    (2147483646, 4, "factors"),     # 2 * 3^2 * 7 * 11 * 31 * 151 * 331
    (735134400, 3, "factors"),      # 1344 divisors
])
def test_split_of_any_32_bit_extent_is_fast(length: int, n: int, policy: str) -> None:
    start = time.process_time()
    space = SplitSpace([VirtualAxis(length)], policy, num_outputs=n)
    assert time.process_time() - start < 5
    assert all(math.prod(e.size[1:]) <= length for e in space.entities)
    if policy == "factors":
        assert all(length % math.prod(e.size[1:]) == 0 for e in space.entities)


def test_split_refuses_what_cannot_be_enumerated() -> None:
    start = time.process_time()
    with pytest.raises(SpaceError, match=r"axis length 99999999999999999999 is beyond 32-bit indexing"):
        SplitSpace([VirtualAxis(99999999999999999999)], "factors", num_outputs=2)
    with pytest.raises(SpaceError, match=r"splitting an axis of length 735134400 into 4 parts gives more "
                                         r"than 1000000 candidates"):
        SplitSpace([VirtualAxis(735134400)], "factors", num_outputs=4)
    assert time.process_time() - start < 0.5


def test_reorder_policies() -> None:
    axes = [VirtualAxis(4) for _ in range(4)]
    cfg = ConfigSpace()
    cfg.define_reorder("all", axes[:3], "all")
    cfg.define_reorder("identity", axes, "identity")
    cfg.define_reorder("interval", axes, "interval_all", interval=(1, 3))
    cfg.define_reorder("cand", axes, "candidate", candidate=[[axes[3], axes[2], axes[1], axes[0]]])
    all_perms = [list(p) for p in itertools.permutations(range(3))]
    assert [e.perm for e in cfg.space_map["all"].entities] == all_perms
    assert [e.perm for e in cfg.space_map["identity"].entities] == [[0, 1, 2, 3]]
    assert [e.perm for e in cfg.space_map["interval"].entities] == [[0, 1, 2, 3], [0, 2, 1, 3]]
    assert [e.perm for e in cfg.space_map["cand"].entities] == [[3, 2, 1, 0]]
    assert repr(cfg.space_map["all"]) == "Reorder(policy=all) len=6"


def test_knob_repr_and_values() -> None:
    cfg = ConfigSpace()
    assert cfg.define_knob("mode", ["fast", 2, False]) == []
    assert repr(cfg.space_map["mode"]) == "OtherOption([fast, 2, False]) len=3"
    assert cfg["mode"].val == "fast"


def test_define_returns_axes_and_entity_returns_placeholders() -> None:
    cfg = ConfigSpace()
    outs = cfg.define_split("t", 128, num_outputs=3)
    assert [a.index for a in outs] == [0, 1, 2] and outs[0].space is cfg.space_map["t"]
    assert cfg["t"].size == [-1, 1, 1]  # the first entity while collecting
    entity = cfg.get(5)
    assert [a.space for a in entity.define_split("t", 128, num_outputs=3)] == [None, None, None]
    assert entity.space_map == OrderedDict()


def test_mixed_radix_index_first_knob_fastest() -> None:
    cfg = ConfigSpace()
    cfg.define_split("tile_y", 128, num_outputs=2)
    cfg.define_split("tile_x", 128, num_outputs=2)
    assert cfg.point2knob(4) == [4, 0]
    assert cfg.point2knob(8) == [0, 1]
    assert cfg.point2knob(12) == [4, 1]
    assert cfg.knob2point([4, 1]) == 12
    assert cfg.get(10)["tile_y"].size == [-1, 4] and cfg.get(10)["tile_x"].size == [-1, 2]
    assert str(cfg.get(0)) == "[('tile_y', [-1, 1]), ('tile_x', [-1, 1])],None,0"
    with pytest.raises(IndexError, match="Index out of range: size 64, got index 64"):
        cfg.get(64)
    with pytest.raises(SpaceIndexError):
        cfg.get(-1)


@pytest.mark.parametrize(("kernel", "positions", "index"), [
    ([192, 2048, 1, 1], [72, 4, 9, 5, 0, 0, 2, 1], 8797896),
    ([448, 2048, 1, 1], [44, 5, 9, 5, 0, 0, 0, 0], 734204),
])
def test_real_cuda_log_indices(kernel: list[int], positions: list[int], index: int) -> None:
    # Old CUDA conv2d template (tophub cuda_v0.10.log): data [1, 2048, 8, 8], 1x1 kernels.
    co, ci, kh, kw = kernel
    cfg = ConfigSpace()
    for name, length, n in [("tile_f", co, 4), ("tile_y", 8, 4), ("tile_x", 8, 4), ("tile_rc", ci, 2),
                            ("tile_ry", kh, 2), ("tile_rx", kw, 2)]:
        cfg.define_split(name, length, num_outputs=n)
    cfg.define_knob("auto_unroll_max_step", [0, 512, 1500])
    cfg.define_knob("unroll_explicit", [0, 1])
    if co == 192:
        assert cfg.dims == [336, 20, 20, 12, 1, 1, 3, 2]
        entity = cfg.get(index)
        assert entity["tile_f"].size == [-1, 1, 32, 1] and entity["tile_rc"].size == [-1, 32]
        assert entity["auto_unroll_max_step"].val == 1500
    assert cfg.knob2point(positions) == index
    assert cfg.point2knob(index) == positions


def test_empty_space_has_one_config() -> None:
    cfg = ConfigSpace()
    assert len(cfg) == 1 and cfg.range_length == 1
    assert str(cfg.get(0)) == "[],None,0"


def multi_filtered_space() -> ConfigSpace:
    cfg = ConfigSpace()
    cfg.define_split("tile_y", 64, num_outputs=2)
    cfg.define_split("tile_x", 64, num_outputs=2)
    cfg.multi_filter(filter=lambda e: 32 <= e["tile_x"].size[1] * e["tile_y"].size[1] < 1024)
    return cfg


def test_multi_filter_marks_indices_invalid_but_keeps_dims() -> None:
    cfg = multi_filtered_space()
    valid = [i for i in range(cfg.range_length)
             if 32 <= cfg.space_map["tile_x"][i // 7].size[1] * cfg.space_map["tile_y"][i % 7].size[1] < 1024]
    assert cfg.dims == [7, 7] and cfg.range_length == 49
    assert len(cfg) == len(valid) == 28
    assert [i for i in range(49) if cfg.is_index_valid(i)] == valid
    assert cfg.subrange_length(0, 20) == sum(1 for i in valid if i < 20)
    with pytest.raises(IndexError, match="multi-filter"):
        cfg.get(0)
    assert cfg.get_next_index(-1) == valid[0] == 5
    assert cfg.get_next_index(valid[0]) == valid[1]
    assert cfg.get_next_index(valid[3], n=-2) == valid[1]
    assert cfg.get_next_index(valid[-1]) is None


def test_random_index_apis_respect_filter_and_exclusion() -> None:
    cfg = multi_filtered_space()
    rng = np.random.default_rng(0)
    sample = cfg.sample_ints(28, rng=rng)
    assert sorted(sample.tolist()) == [i for i in range(49) if cfg.is_index_valid(i)]
    exclude = set(sample[:27].tolist())
    assert cfg.get_rand_index(to_exclude=exclude, rng=rng) == int(sample[27])
    with pytest.raises(SpaceError, match="no valid index left"):
        cfg.get_rand_index(to_exclude=set(sample.tolist()), rng=rng)
    for p in sample[:10]:
        q = cfg.random_walk(int(p), rng=rng)
        assert q != p and cfg.is_index_valid(q)
        assert sum(a != b for a, b in zip(cfg.point2knob(q), cfg.point2knob(int(p)), strict=True)) >= 1
    with pytest.raises(SpaceError):
        cfg.sample_ints(29)


def test_json_round_trip_and_features() -> None:
    cfg = ConfigSpace()
    axes = [VirtualAxis(4), VirtualAxis(4)]
    cfg.define_split("tile", 16, num_outputs=3)
    cfg.define_reorder("re", axes, "all")
    cfg.define_annotate("an", axes, "try_unroll_vec")
    cfg.define_knob("ot", [0, 512])
    entity = cfg.get(cfg.knob2point([5, 1, 2, 1]))
    d = entity.to_json_dict()
    assert d == {"index": entity.index, "code_hash": None,
                 "entity": [("tile", "sp", [-1, 1, 2]), ("re", "re", [1, 0]), ("an", "an", ["none", "vec"]),
                            ("ot", "ot", 512)]}
    back = ConfigEntity.from_json_dict(d)
    assert str(back) == str(entity)
    one_hot_none = [1.0] + [0.0] * 10
    one_hot_vec = [0.0, 1.0] + [0.0] * 9
    assert entity.get_flatten_feature().tolist() == [-1, 1, 2, 1, 0] + one_hot_none + one_hot_vec + [512]
    assert entity.get_other_option() == {"ot": 512}
    with pytest.raises(SpaceError, match="Invalid config knob type: xx"):
        ConfigEntity.from_json_dict({"index": 0, "code_hash": None, "entity": [["a", "xx", 1]]})


def test_add_flop_and_errors() -> None:
    cfg = ConfigSpace()
    cfg.add_flop(3)
    cfg.add_flop(2.5)
    assert cfg.flop == 5.5
    assert cfg.valid()
    cfg.raise_error("Too large factor for unrolling")
    assert not cfg.valid() and cfg.errors == ["Too large factor for unrolling"]


def test_multi_filtered_space_pickles_with_its_validity() -> None:
    import pickle

    cfg = multi_filtered_space()
    clone = pickle.loads(pickle.dumps(cfg))
    assert len(clone) == 28
    valid = [i for i in range(49) if cfg.is_index_valid(i)]
    assert [i for i in range(49) if clone.is_index_valid(i)] == valid
    assert str(clone.get(5)) == str(cfg.get(5))


def test_knobs_of_every_kind_refuse_more_values_than_can_be_enumerated() -> None:
    start = time.process_time()
    with pytest.raises(SpaceError, match=r"define_reorder: all orders of 12 axes give 479001600 values, more "
                                         r"than a knob may have \(1000000\)"):
        ReorderSpace([VirtualAxis(2) for _ in range(12)], "all")
    with pytest.raises(SpaceError, match=r"define_annotate: try_unroll_vec on 20 axes give 11534336 values"):
        AnnotateSpace([VirtualAxis(2) for _ in range(20)], "try_unroll_vec")
    assert time.process_time() - start < 0.5
    # what stays under the bound enumerates as TVM's product with at most one "vec"
    axes = [VirtualAxis(2) for _ in range(4)]
    assert [e.anns for e in AnnotateSpace(axes, "try_unroll_vec").entities] == [
        list(c) for c in itertools.product(["none", "unroll", "vec"], repeat=4) if c.count("vec") <= 1]


@pytest.mark.parametrize("define", [
    lambda c: c.define_split("s", 16, policy="candidate", num_outputs=2),
    lambda c: c.define_reorder("r", [c.axis(4), c.axis(4)], policy="interval_all"),
    lambda c: c.define_reorder("r", [c.axis(4), c.axis(4)], policy="candidate"),
    lambda c: c.define_annotate("a", [c.axis(4), c.axis(4)], policy="locate_cache"),
])
def test_a_policy_without_its_option_names_the_option(define) -> None:
    with pytest.raises(SpaceError, match=r"needs the keyword argument \w+="):
        define(ConfigSpace())
