"""A workload without a record gets the config of the nearest record of its template and CPU,
moved into its own space with the default layouts' blocks; the choice is deterministic and says
where it came from; an exact record still answers as before; without a comparable record the
template's fallback config stays."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tunecli.engine.build import build
from tunecli.engine.log import tophub
from tunecli.engine.log.history_best import ApplyHistoryBest, pretuned_packages
from tunecli.engine.log.nearest_record import knob_distance, nearest_config, workload_distance
from tunecli.engine.log.record_machine import same_machine
from tunecli.engine.measure.result import MeasureInput, MeasureResult
from tunecli.engine.target import Target
from tunecli.engine.task.config_source import ConfigSource, config_source
from tunecli.engine.task.dispatcher import DispatchContext
from tunecli.engine.task.fallback_config import FallbackConfigEntity
from tunecli.engine.task.task import create
from tunecli.errors import TuneError

#: This machine's CPU, named: the package below holds records of it, and its kernels run here.
HOST = Target(f"llvm -mcpu={Target('llvm').llvm_cpu}")
CONV = "conv2d_NCHWc.x86"


@pytest.fixture(autouse=True)
def package_of_this_cpu(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """The shipped package's Zen 4 records (ResNet-18's and MobileNet's tasks) as records of this
    machine's CPU, in a package searched before the shipped one."""
    shipped = (tophub.SHIPPED_DIR / "llvm.log").read_text()
    (tmp_path / "llvm.log").write_text(shipped.replace("-mcpu=znver4", f"-mcpu={HOST.llvm_cpu}"))
    monkeypatch.delenv(tophub.ENV_VAR, raising=False)
    tophub.set_locations([tmp_path])
    yield
    tophub.set_locations(None)


def conv(channels: int, size: int, out: int | None = None, k: int = 3, stride: int = 1) -> tuple:
    pad = k // 2
    return (CONV, ("TENSOR", (1, channels, size, size), "float32"),
            ("TENSOR", (out or channels, channels, k, k), "float32"), (stride, stride), (pad,) * 4, (1, 1),
            "NCHW", "NCHW", "float32")


def query(workload: tuple, target: Target = HOST, records: object = None, **kw: object):
    with ApplyHistoryBest(records, **kw):
        return DispatchContext.current.query(target, workload)


def default_config(workload: tuple, target: Target = HOST) -> FallbackConfigEntity:
    task = create(workload[0], workload[1:], target)
    fallback = FallbackConfigEntity()
    task.instantiate(fallback)
    return fallback


def test_an_unseen_convolution_gets_the_nearest_package_record_moved_into_its_space():
    workload = conv(72, 56)  # ResNet-18's 3x3 layers have 64 channels at 56x56, none has 72
    cfg = query(workload)
    source = config_source(cfg)
    assert source.kind == "nearest" and not source.measured
    assert "float32[1,64,56,56], float32[64,64,3,3]" in source.detail and "llvm.log" in source.detail
    task = create(CONV, workload[1:], HOST)
    assert task.config_space.is_index_valid(cfg.index)
    assert str(task.config_space.get(cfg.index)) == str(cfg)  # an entity of its own space
    default = default_config(workload)
    # the default layouts: channel blocks as the fallback's (those the graph tuner measures)
    assert cfg["tile_ic"].size[-1] == default["tile_ic"].size[-1]
    assert cfg["tile_oc"].size[-1] == default["tile_oc"].size[-1]
    # the other knobs are the record's, moved to legal values
    package = pretuned_packages(HOST)[0]
    (record, _), = [pair for key, pair in package.best_by_target.items()
                    if key == (HOST, conv(64, 56))]
    assert cfg["unroll_kw"].val == record.config["unroll_kw"].val
    assert 56 % cfg["tile_ow"].size[-1] == 0


def test_the_choice_is_deterministic_whatever_the_order_of_the_records():
    workload = conv(72, 56)
    package = pretuned_packages(HOST)[0]
    refs = package.references()
    first = nearest_config(HOST, workload, refs)
    again = nearest_config(HOST, workload, list(reversed(refs)))
    assert first is not None and again is not None
    assert (first.index, str(first), first.source) == (again.index, str(again), again.source)
    assert query(workload).index == first.index


def test_the_transferred_config_builds_and_computes_the_convolution():
    workload = conv(72, 28, out=40)
    cfg = query(workload)
    assert config_source(cfg).kind == "nearest"
    task = create(CONV, workload[1:], HOST)
    with HOST:
        sch, bufs = task.instantiate(cfg)
    mod = build(sch, bufs, target=HOST)
    rng = np.random.default_rng(0)
    inputs = [rng.standard_normal(b.shape).astype("float32") for b in bufs[:-1]]
    out = np.zeros(bufs[-1].shape, dtype="float32")
    mod(*inputs, out)
    np.testing.assert_allclose(out, task.reference(*inputs), rtol=1e-4, atol=1e-4)


def test_an_exact_record_answers_unchanged():
    workload = conv(64, 56)
    exact = query(workload)
    without_nearest = query(workload, nearest=False)
    assert exact is without_nearest
    assert config_source(exact) == ConfigSource("package", "llvm.log")


def test_a_users_record_on_this_cpu_is_a_candidate_and_nearer_wins(tmp_path):
    mine = conv(72, 56, out=96)
    task = create(CONV, mine[1:], HOST)
    chosen = task.config_space.get(task.config_space.range_length - 1)
    record = (MeasureInput(HOST, task, chosen), MeasureResult([1e-3], 0, 0.1, 0.0))
    cfg = query(conv(72, 56), records=[record])
    assert config_source(cfg).kind == "nearest"
    assert "float32[96,72,3,3]" in cfg.source.detail and "(log" in cfg.source.detail


def test_an_outer_contexts_exact_record_answers_before_an_inner_nearest_one():
    workload = conv(72, 56)
    task = create(CONV, workload[1:], HOST)
    logged = task.config_space.get(5)
    record = (MeasureInput(HOST, task, logged), MeasureResult([1e-3], 0, 0.1, 0.0))
    with ApplyHistoryBest([record], pretuned=False), ApplyHistoryBest([]):
        cfg = DispatchContext.current.query(HOST, workload)
    assert cfg.index == 5 and config_source(cfg).kind == "log"


def test_records_of_another_cpu_or_template_are_never_used():
    workload = conv(72, 56)
    other = "bdver4" if HOST.llvm_cpu != "bdver4" else "btver2"  # a CPU no package has records of
    other_cpu = query(workload, target=Target(f"llvm -mcpu={other}"))
    assert other_cpu.is_fallback and config_source(other_cpu).kind == "default"
    tensor = ("TENSOR", (2, 72, 64), "float32")
    batch_matmul = ("batch_matmul.x86", tensor, tensor, None, "float32", False, True)
    cfg = query(batch_matmul)
    assert cfg.is_fallback and config_source(cfg).kind == "default"


def test_workloads_compare_by_shape_and_not_across_dtype_or_template():
    assert workload_distance(conv(64, 56), conv(64, 56)) == 0
    near, far = workload_distance(conv(72, 56), conv(64, 56)), workload_distance(conv(72, 56), conv(512, 7))
    assert near is not None and far is not None and near < far
    strided = workload_distance(conv(64, 56), conv(64, 56, stride=2))
    assert strided is not None and strided > workload_distance(conv(64, 56), conv(128, 56))
    int8 = conv(64, 56)[:1] + (("TENSOR", (1, 64, 56, 56), "int8"),) + conv(64, 56)[2:]
    assert workload_distance(conv(64, 56), int8) is None
    assert workload_distance(conv(64, 56), ("dense.x86",) + conv(64, 56)[1:]) is None


def test_an_extent_of_one_is_never_compared_with_a_larger_one():
    def dense(rows: int) -> tuple:
        return ("dense.x86", ("TENSOR", (rows, 768), "float32"), ("TENSOR", (1000, 768), "float32"),
                None, "float32")

    assert workload_distance(dense(1), dense(128)) is None  # a matrix-vector product is no GEMM
    assert workload_distance(dense(64), dense(128)) is not None
    assert workload_distance(conv(64, 56, k=1), conv(64, 56)) is None  # nor a 1x1 kernel a 3x3 one


def test_a_config_source_has_a_known_kind():
    assert ConfigSource("default").text() == "default"
    assert ConfigSource("nearest", "x").text() == "nearest: x"
    for unknown in ("guess", "model"):  # no cost model chooses configs at build time
        with pytest.raises(TuneError, match="unknown kind"):
            ConfigSource(unknown)


def test_a_network_built_with_nearest_configs_counts_them_and_computes_right():
    from tunecli import relay
    from tunecli.engine import graph as g
    from tunecli.engine.graph.build_module import build as build_network
    from tunecli.engine.graph.passes import PassContext

    x = relay.var("data", shape=(1, 72, 14, 14))
    w1, w2 = relay.var("w1", shape=(72, 72, 3, 3)), relay.var("w2", shape=(40, 72, 1, 1))
    mod = g.IRModule.from_expr(relay.nn.conv2d(relay.nn.relu(relay.nn.conv2d(x, w1, padding=(1, 1))), w2))
    rng = np.random.default_rng(0)
    params = {"w1": rng.uniform(-1, 1, (72, 72, 3, 3)).astype("float32"),
              "w2": rng.uniform(-1, 1, (40, 72, 1, 1)).astype("float32")}
    with PassContext(opt_level=3):
        lib = build_network(mod, HOST, params=params)
    assert lib.summary.line() == "0 of 2 tasks tuned; 2 chosen from the nearest records"
    assert all(a.source.kind == "nearest" and "llvm.log" in a.source.detail for a in lib.summary.nearest)
    data = rng.uniform(-1, 1, (1, 72, 14, 14)).astype("float32")
    m = lib["default"](None)
    m.set_input("data", data)
    m.run()
    np.testing.assert_allclose(m.get_output(0).numpy(), g.evaluate(mod, [data], params), rtol=1e-4, atol=1e-3)


def test_a_record_transfers_only_to_the_same_machine():
    assert same_machine(HOST, Target(str(HOST)))
    assert not same_machine(Target("llvm -mcpu=znver3"), Target("llvm -mcpu=znver4"))
    assert not same_machine(Target("cuda -arch=sm_80"), Target("cuda -arch=sm_90"))
    assert not same_machine(Target("llvm -device=arm_cpu -model=rk3399 -mtriple=aarch64-linux-gnu"),
                            Target("llvm -device=arm_cpu -model=bcm2837 -mtriple=aarch64-linux-gnu"))


def test_among_the_nearest_workloads_the_one_whose_knobs_split_the_same_extents_wins():
    # ResNet-50's 1x1 1024->256 at 14x14: closer in channels to MobileNet's 960->320 at 7x7, but a
    # register tile over 14 output columns transfers from a 14x14 record
    workload = conv(1024, 14, out=256, k=1)
    cfg = query(workload)
    assert config_source(cfg).kind == "nearest"
    data = cfg.source.detail.split("(")[1].split(",")[:4]
    assert data[2:] == ["14", "14]"], cfg.source.detail
    space = create(CONV, workload[1:], HOST).config_space
    same = create(CONV, conv(512, 14, out=512, k=1)[1:], HOST).config_space
    smaller = create(CONV, conv(960, 7, out=320, k=1)[1:], HOST).config_space
    assert knob_distance(space, same) == 0 < knob_distance(space, smaller)


def test_the_environment_can_turn_nearest_records_off(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("TUNECLI_NO_NEAREST", "1")
    assert query(conv(72, 56)).is_fallback
    assert config_source(query(conv(72, 56), nearest=True)).kind == "nearest"


def test_a_record_its_template_cannot_trace_is_no_candidate():
    from tunecli.engine.task.task import Task

    workload = conv(72, 56)
    config = create(CONV, workload[1:], HOST).config_space.get(0)
    broken = Task(CONV, conv(72, 56, stride=0)[1:])  # a workload no convolution has (stride 0)
    far = create(CONV, conv(512, 7)[1:], HOST)
    records = [(MeasureInput(HOST, broken, config), MeasureResult([1e-4], 0, 0.1, 0.0)),
               (MeasureInput(HOST, far, far.config_space.get(0)), MeasureResult([1e-3], 0, 0.1, 0.0))]
    cfg = query(workload, records=records, pretuned=False)
    assert config_source(cfg).kind == "nearest" and "float32[1,512,7,7]" in cfg.source.detail
