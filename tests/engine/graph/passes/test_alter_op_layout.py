"""AlterOpLayout: at opt_level 3 on x86 every NCHW convolution computes in the blocked layouts its
config chooses, the blocks propagate through layout-agnostic consumers, layout transforms remain
only where layouts change, each convolution keeps its own config (apply_graph_best), and the
networks compute what the interpreter computes."""

from __future__ import annotations

import json

import numpy as np
import pytest

from tests.engine.autotvm_templates import tophub_dir
from tunecli import relay
from tunecli.engine import graph as g
from tunecli.engine.graph.build_module import BuiltGraph, build, optimize
from tunecli.engine.graph.extract import extract_from_program
from tunecli.engine.graph.models import mobilenet_v2, resnet, squeezenet, vgg
from tunecli.engine.graph.passes import InferType, PassContext
from tunecli.engine.graph_tuner.conv_graph import conv_graph, main_function
from tunecli.engine.graph_tuner.graph_best import ApplyGraphBest
from tunecli.engine.log.history_best import apply_history_best
from tunecli.engine.log.record import encode
from tunecli.engine.measure.result import MeasureErrorNo, MeasureInput, MeasureResult
from tunecli.engine.ops.reference import winograd_kernel_transform
from tunecli.engine.target import Target
from tunecli.engine.task.dispatcher import DispatchContext
from tunecli.engine.task.task import create

RNG = np.random.default_rng(0)
LLVM = Target("llvm")
BLOCKED = ("nn.contrib_conv2d_NCHWc", "nn.contrib_depthwise_conv2d_NCHWc")
WINOGRAD = "nn.contrib_conv2d_NCHWc_winograd"


def _optimize(mod: g.IRModule, params: dict, opt_level: int = 3, **kw: object) -> g.Function:
    with PassContext(opt_level=opt_level, **kw):
        return optimize(mod, params, LLVM)["main"]


def _build(mod: g.IRModule, params: dict, opt_level: int = 3) -> BuiltGraph:
    with PassContext(opt_level=opt_level):
        return build(mod, "llvm", params=params)


def _run(lib: BuiltGraph, data: np.ndarray) -> np.ndarray:
    m = lib["default"](None)
    m.set_input(0, data)
    m.run()
    return m.get_output(0).numpy()


def _calls(fn: g.Function) -> list[g.Call]:
    return [n for n in g.post_order(fn) if isinstance(n, g.Call) and isinstance(n.op, g.Op)]


def _kernel_calls(lib: BuiltGraph) -> list[str]:
    return [n["attrs"]["func_name"] for n in json.loads(lib.get_graph_json())["nodes"] if n["op"] == "tvm_op"]


def _net(body: g.Expr) -> g.IRModule:
    return InferType()(g.IRModule.from_expr(relay.Function(relay.analysis.free_vars(body), body)))


def _weights(mod: g.IRModule) -> dict:
    return {p.name_hint: RNG.uniform(-1, 1, p.checked_type.shape).astype("float32")
            for p in mod["main"].params[1:]}


@pytest.fixture(scope="module")
def resnet18() -> tuple:
    mod, params = resnet.get_workload(num_layers=18, batch_size=1, image_shape=(3, 64, 64))
    return mod, params, _build(mod, params)


@pytest.mark.slow
def test_resnet18_convolutions_are_blocked_and_transforms_only_where_blocks_change(resnet18: tuple) -> None:
    mod, params, lib = resnet18
    fused = _optimize(mod, params)
    counts = g.count_calls(fused)
    # without records the 13 3x3 stride-1 convolutions are Winograd ones (the higher plevel)
    assert counts.get("nn.conv2d", 0) == 0
    assert counts["nn.contrib_conv2d_NCHWc"] == 8 and counts[WINOGRAD] == 13
    transforms = [c for c in _calls(fused) if c.op.name == "layout_transform"]
    pairs = [(c.attrs.src_layout, c.attrs.dst_layout) for c in transforms]
    assert all(src != dst for src, dst in pairs)
    # the fallback configs' blocks (conv2d_nchwc.network_channel_block): with 16 vector registers
    # direct convolutions NCHW8c -> NCHW8c and Winograd ones NCHW8c -> NCHW16c; with 32 all NCHW32c
    wide = LLVM.vector_bits >= 512
    winograd_out = "NCHW32c" if wide else "NCHW16c"
    # NCHW only into the first convolution (3 input channels) and after the global pooling
    assert sorted(p for p in pairs if "NCHW" in p) == [("NCHW", "NCHW3c"), (winograd_out, "NCHW")]
    convs = [c for c in _calls(fused) if c.op.name in (*BLOCKED, WINOGRAD)]
    assert all(len(c.args[0].checked_type.shape) == 5 for c in convs)  # kernels read blocked data, no packing
    assert {c.attrs.out_layout for c in convs if c.op.name == WINOGRAD} == {winograd_out}
    assert not wide or sorted(pairs) == [("NCHW", "NCHW3c"), ("NCHW32c", "NCHW")]  # nothing between
    kernels = _kernel_calls(lib)
    assert any("layout_transform" in k and "batch_flatten" in k for k in kernels)  # fused with the flatten
    data = RNG.uniform(-1, 1, (1, 3, 64, 64)).astype("float32")
    expected = g.evaluate(mod, [data], params)
    np.testing.assert_allclose(_run(lib, data), expected, rtol=1e-4, atol=1e-4 * np.abs(expected).max())


def test_resnet18_with_tvms_pretuned_configs_transforms_where_blocks_change() -> None:
    mod, params = resnet.get_workload(num_layers=18, batch_size=1, image_shape=(3, 224, 224))
    with apply_history_best(str(tophub_dir() / "llvm_v0.04.log")):
        unfused = _optimize(mod, params, disabled_pass=["FuseOps"])
    calls = _calls(unfused)
    transforms = [c for c in calls if c.op.name == "layout_transform"]
    pairs = [(c.attrs.src_layout, c.attrs.dst_layout) for c in transforms]
    assert pairs[0] == ("NCHW", "NCHW3c") and pairs[-1] == ("NCHW32c", "NCHW")  # the input; before flatten
    assert all(src != dst and "NCHW" not in (src, dst) for src, dst in pairs[1:-1])
    users = {id(a): c.op.name for c in calls for a in c.args}
    assert all(users[id(t)] in ("nn.contrib_conv2d_NCHWc", "add", "nn.batch_flatten") for t in transforms)
    assert len(transforms) == 22  # TVM's per-workload configs change blocks often (no graph tuner)
    assert WINOGRAD not in g.count_calls(unfused)  # its records are direct ones: as TVM, direct wins


def test_opt_level_2_and_a_disabled_pass_leave_the_graph_nchw() -> None:
    mod, params = resnet.get_workload(num_layers=18, batch_size=1, image_shape=(3, 32, 32))
    for fused in (_optimize(mod, params, opt_level=2),
                  _optimize(mod, params, opt_level=3, disabled_pass=["AlterOpLayout"])):
        counts = g.count_calls(fused)
        assert counts["nn.conv2d"] == 21 and "layout_transform" not in counts
        assert not any(name in counts for name in BLOCKED)


def test_extracted_tasks_are_those_of_the_nchw_convolutions() -> None:
    mod, params = resnet.get_workload(num_layers=18, batch_size=1, image_shape=(3, 32, 32))
    with PassContext(opt_level=3):
        tasks = extract_from_program(mod, params, "llvm", ops=(relay.op.get("nn.conv2d"),))
    assert len(tasks) == 12
    assert all(t.workload[1][1][0] == 1 and len(t.workload[1][1]) == 4 for t in tasks)  # NCHW ("TENSOR"s)
    assert all(t.workload[6:8] == ("NCHW", "NCHW") for t in tasks)


@pytest.mark.parametrize("name", ["mobilenet-v2", "squeezenet-1.1", "vgg-11"])
def test_network_at_opt_level_3_equals_the_interpreter(name: str) -> None:
    mod, params = {
        "mobilenet-v2": lambda: mobilenet_v2.get_workload(image_shape=(3, 32, 32)),
        "squeezenet-1.1": lambda: squeezenet.get_workload(version="1.1", image_shape=(3, 32, 32)),
        "vgg-11": lambda: vgg.get_workload(1, image_shape=(3, 32, 32), num_layers=11),
    }[name]()
    lib = _build(mod, params)
    assert not any("conv2d" in k and "contrib" not in k for k in _kernel_calls(lib))
    data = RNG.uniform(-1, 1, (1, 3, 32, 32)).astype("float32")
    np.testing.assert_allclose(_run(lib, data), g.evaluate(mod, [data], params), rtol=1e-4, atol=1e-6)


def test_squeezenet_concatenates_channel_blocks() -> None:
    mod, params = squeezenet.get_workload(version="1.1", image_shape=(3, 32, 32))
    fused = _optimize(mod, params)
    concats = [c for c in _calls(fused) if c.op.name == "concatenate"]
    assert concats and all(len(c.checked_type.shape) == 5 for c in concats)


def test_layout_fixed_operators_get_nchw_back() -> None:
    x = relay.var("data", shape=(1, 8, 6, 6))
    conv = relay.nn.relu(relay.nn.conv2d(x, relay.var("w", shape=(16, 8, 3, 3)), padding=(1, 1)))
    flat = relay.nn.dense(relay.nn.batch_flatten(conv), relay.var("fc", shape=(10, 16 * 36)))
    moved = relay.transpose(conv, (0, 2, 3, 1))
    mod = _net(relay.Tuple([flat, relay.nn.softmax(conv, axis=1), moved]))
    params = _weights(mod)
    unfused = _optimize(mod, params, disabled_pass=["FuseOps"])
    for call in _calls(unfused):
        if call.op.name in ("nn.batch_flatten", "nn.softmax", "transpose"):
            (arg,) = call.args
            assert arg.op.name == "layout_transform" and arg.attrs.dst_layout == "NCHW"
            assert len(arg.checked_type.shape) == 4
    lib = _build(mod, params)
    data = RNG.uniform(-1, 1, (1, 8, 6, 6)).astype("float32")
    expected = g.evaluate(mod, [data], params)
    m = lib["default"](None)
    m.set_input("data", data)
    m.run()
    for k, want in enumerate(expected):
        np.testing.assert_allclose(m.get_output(k).numpy(), want, rtol=1e-4, atol=1e-5)


def test_bias_and_channel_constants_are_re_laid_out_at_build_time() -> None:
    x = relay.var("data", shape=(1, 8, 6, 6))
    conv = relay.nn.conv2d(x, relay.var("w", shape=(16, 8, 3, 3)), padding=(1, 1))
    biased = relay.nn.bias_add(conv, relay.var("b", shape=(16,)))
    scaled = relay.multiply(biased, relay.var("s", shape=(16, 1, 1)))
    mod = _net(relay.nn.max_pool2d(relay.clip(scaled, 0.0, 6.0), pool_size=(2, 2), strides=(2, 2)))
    params = _weights(mod)
    fused = _optimize(mod, params)
    calls = _calls(fused)
    assert [c.op.name for c in calls if c.op.name == "layout_transform"] == ["layout_transform"] * 2
    pool = next(c for c in calls if c.op.name == "nn.max_pool2d")
    conv = next(c for c in calls if c.op.name in (*BLOCKED, WINOGRAD))
    assert pool.attrs.layout == conv.attrs.out_layout and pool.attrs.layout.endswith("c")
    lib = _build(mod, params)
    data = RNG.uniform(-1, 1, (1, 8, 6, 6)).astype("float32")
    np.testing.assert_allclose(_run(lib, data), g.evaluate(mod, [data], params), rtol=1e-4, atol=1e-5)


def _residual_block_net() -> g.IRModule:
    """A ResNet-style block on 16 channels: 3x3 conv + bias + relu, 3x3 conv + bias, + input, relu."""
    x = relay.var("data", shape=(1, 16, 32, 32))
    y = relay.nn.conv2d(x, relay.var("w1", shape=(16, 16, 3, 3)), padding=(1, 1))
    y = relay.nn.relu(relay.nn.bias_add(y, relay.var("b1", shape=(16,))))
    y = relay.nn.bias_add(relay.nn.conv2d(y, relay.var("w2", shape=(16, 16, 3, 3)), padding=(1, 1)),
                          relay.var("b2", shape=(16,)))
    return _net(relay.nn.relu(relay.add(y, x)))


def test_winograd_convolutions_read_kernels_transformed_once_at_build_time() -> None:
    mod = _residual_block_net()
    params = _weights(mod)
    unfused = _optimize(mod, params, disabled_pass=["FuseOps"])
    convs = [c for c in _calls(unfused) if c.op.name == WINOGRAD]
    assert len(convs) == 2 and g.count_calls(unfused).get("nn.contrib_conv2d_NCHWc", 0) == 0
    assert all(isinstance(c.args[1], g.Constant) for c in convs)  # the transform is folded
    lib = _build(mod, params)
    kernels = _kernel_calls(lib)
    assert not any("transform" in k and "layout" not in k for k in kernels)  # no weight transform runs
    # bias, relu and the residual add are the Winograd kernels' epilogues
    assert [k for k in kernels if "winograd" in k] == [
        "tvmgen_default_fused_nn_contrib_conv2d_NCHWc_winograd_add_nn_relu",
        "tvmgen_default_fused_nn_contrib_conv2d_NCHWc_winograd_add_add_nn_relu"]
    for conv in convs:  # the executor's params hold the transformed kernels
        cfg = conv.attrs.config
        m, ic_bn, oc_bn = cfg["tile_m"].val, cfg["tile_ic"].size[-1], cfg["tile_oc"].size[-1]
        held = [np.asarray(p) for p in lib.get_params().values() if p.shape == conv.args[1].data.shape]
        assert any(np.array_equal(h, conv.args[1].data) for h in held)
        assert any(np.allclose(conv.args[1].data, winograd_kernel_transform(params[w], m, ic_bn, oc_bn))
                   for w in ("w1", "w2"))
    data = RNG.uniform(-1, 1, (1, 16, 32, 32)).astype("float32")
    expected = g.evaluate(mod, [data], params)
    np.testing.assert_allclose(_run(lib, data), expected, rtol=1e-4, atol=1e-4 * np.abs(expected).max())


def test_a_tuned_direct_convolution_is_built_direct_as_in_tvm(tmp_path: object) -> None:
    mod = _residual_block_net()
    params = _weights(mod)
    (task,) = extract_from_program(mod, params, "llvm")
    path = tmp_path / "direct.log"  # type: ignore[operator]
    ok = MeasureResult((1e-3,), MeasureErrorNo.NO_ERROR, 0.01, 0.0)
    path.write_text(encode(MeasureInput(task.target, task, _config(task, 8, 8)), ok) + "\n")
    with apply_history_best(str(path)):
        counts = g.count_calls(_optimize(mod, params))
    assert counts["nn.contrib_conv2d_NCHWc"] == 2 and WINOGRAD not in counts


class _RandomConfigs(DispatchContext):
    """Answers every workload with a random config of its space (any legal block sizes)."""

    def __init__(self, seed: int):
        super().__init__()
        self.rng = np.random.default_rng(seed)

    def _query_inside(self, target: object, workload: tuple | None) -> object:
        space = create(workload[0], workload[1:], target).config_space
        return space.get(int(self.rng.integers(len(space))))


@pytest.mark.parametrize("seed", range(6))
def test_random_conv_chains_with_random_blocks_compute_the_same(seed: int) -> None:
    rng = np.random.default_rng(seed)
    channels = [int(c) for c in rng.choice([4, 6, 8, 12, 16], size=4)]
    x = relay.var("data", shape=(1, channels[0], 8, 8))
    y, skip = x, None
    for k, (ci, co) in enumerate(zip(channels, channels[1:], strict=False)):
        size = int(rng.choice([1, 3]))
        if rng.random() < 0.4:  # a depthwise convolution first
            y = relay.nn.conv2d(y, relay.var(f"d{k}", shape=(ci, 1, 3, 3)), padding=(1, 1), groups=ci)
        y = relay.nn.conv2d(y, relay.var(f"w{k}", shape=(co, ci, size, size)), padding=(size // 2,) * 2)
        if skip is not None and ci == co and rng.random() < 0.7:
            y = relay.add(y, skip)
        y = relay.nn.relu(y)
        skip = y
        if rng.random() < 0.3:
            y = relay.nn.avg_pool2d(y, pool_size=(2, 2), strides=(1, 1), padding=(1, 1))
            skip = None
    mod = _net(relay.nn.global_avg_pool2d(y))
    params = _weights(mod)
    with _RandomConfigs(seed):
        lib = _build(mod, params)
    data = RNG.uniform(-1, 1, (1, channels[0], 8, 8)).astype("float32")
    np.testing.assert_allclose(_run(lib, data), g.evaluate(mod, [data], params), rtol=1e-4, atol=1e-5)


def _config(task: object, ic_bn: int, oc_bn: int) -> object:
    space = task.config_space  # type: ignore[attr-defined]
    return next(cfg for cfg in map(space.get, range(len(space)))
                if (cfg["tile_ic"].size[-1], cfg["tile_oc"].size[-1]) == (ic_bn, oc_bn))


def test_apply_graph_best_gives_same_workload_convolutions_their_own_configs(tmp_path: object) -> None:
    x = relay.var("data", shape=(1, 16, 8, 8))
    c1 = relay.nn.conv2d(x, relay.var("w1", shape=(16, 16, 3, 3)), padding=(1, 1))
    c2 = relay.nn.conv2d(relay.nn.relu(c1), relay.var("w2", shape=(16, 16, 3, 3)), padding=(1, 1))
    mod = _net(relay.nn.relu(c2))
    params = _weights(mod)
    (task,) = extract_from_program(mod, params, "llvm")
    first, second = _config(task, 4, 8), _config(task, 4, 2)
    path = tmp_path / "graph_opt.log"  # type: ignore[operator]
    ok = MeasureResult((1e-3,), MeasureErrorNo.NO_ERROR, 0.01, 0.0)
    path.write_text("".join(encode(MeasureInput(task.target, task, c), ok) + "\n" for c in (first, second)))
    with ApplyGraphBest(str(path)):
        unfused = _optimize(mod, params, disabled_pass=["FuseOps"])
    convs = [c for c in _calls(unfused) if c.op.name == "nn.contrib_conv2d_NCHWc"]
    assert [c.attrs.config.index for c in convs] == [first.index, second.index]
    assert [(c.attrs.data_layout, c.attrs.out_layout) for c in convs] == [("NCHW4c", "NCHW8c"),
                                                                          ("NCHW4c", "NCHW2c")]
    with ApplyGraphBest(str(path)):
        tuned = _build(mod, params)
    kernels = _kernel_calls(tuned)
    assert len({k for k in kernels if "conv2d" in k}) == 2  # same workload, two configs: two kernels
    assert [k for k in kernels if "layout_transform" in k] == [kernels[0], kernels[2], kernels[4]]
    assert sorted(p.shape for p in tuned.get_params().values() if p.ndim == 6) == [
        (2, 4, 3, 3, 4, 8), (8, 4, 3, 3, 4, 2)]
    untuned = _build(mod, params)
    assert len({k for k in _kernel_calls(untuned) if "conv2d" in k}) == 1  # one config: one kernel
    data = RNG.uniform(-1, 1, (1, 16, 8, 8)).astype("float32")
    np.testing.assert_allclose(_run(tuned, data), _run(untuned, data), rtol=1e-4, atol=1e-5)


class _Recording(DispatchContext):
    """Records the workloads queried, answering none of them (the fallback context answers)."""

    def __init__(self) -> None:
        super().__init__()
        self.queried: list[tuple] = []

    def _query_inside(self, target: object, workload: tuple | None) -> None:
        self.queried.append(workload)  # type: ignore[arg-type]


def _branchy_net() -> relay.Function:
    """Two branches from the input (3x3 then 3x3; a 1x1 shortcut) added, then a concatenation of
    two 1x1 convolutions of the pooled sum."""
    data = relay.var("data", shape=(1, 16, 8, 8))
    c1 = relay.nn.conv2d(data, relay.var("w1"), channels=32, kernel_size=(3, 3), padding=(1, 1))
    c2 = relay.nn.conv2d(relay.nn.relu(c1), relay.var("w2"), channels=32, kernel_size=(3, 3), padding=(1, 1))
    shortcut = relay.nn.conv2d(data, relay.var("w3"), channels=32, kernel_size=(1, 1))
    pooled = relay.nn.max_pool2d(relay.nn.relu(relay.add(c2, shortcut)), pool_size=(2, 2), strides=(2, 2))
    left = relay.nn.conv2d(pooled, relay.var("w4"), channels=16, kernel_size=(1, 1))
    right = relay.nn.conv2d(pooled, relay.var("w5"), channels=16, kernel_size=(3, 3), padding=(1, 1))
    out = relay.concatenate([left, right], axis=1)
    return relay.Function(relay.analysis.free_vars(out), out)


def test_convolutions_are_configured_in_the_graph_tuners_order() -> None:
    net = _branchy_net()
    nodes = conv_graph(main_function(net), ["data"], ["nn.conv2d"]).nodes
    with _Recording() as recording:
        _optimize(InferType()(g.IRModule.from_expr(net)), {})
    direct = [w for w in recording.queried if w[0] != "conv2d_NCHWc_winograd.x86"]
    assert direct == [n.workload for n in nodes]
    # a 3x3 stride-1 convolution's Winograd workload is queried right after its direct one
    for k, w in enumerate(recording.queried):
        if w[0] == "conv2d_NCHWc_winograd.x86":
            assert recording.queried[k - 1] == ("conv2d_NCHWc.x86", *w[1:])


@pytest.fixture(scope="module")
def resnet50() -> tuple:
    return resnet.get_workload(num_layers=50, batch_size=1, image_shape=(3, 32, 32))


def test_fallback_bottlenecks_chain_their_channel_blocks_on_avx512(resnet50: tuple, no_packages) -> None:
    """Without records, ResNet-50's 1x1, Winograd 3x3 and strided convolutions read and write
    the same blocks (two AVX-512 vectors): layout transforms only into the stem and before the
    flatten (before, each Winograd output of two vectors went through one to a 1x1 reading one)."""
    with PassContext(opt_level=3):
        fused = optimize(*resnet50, Target("llvm -mcpu=skylake-avx512"))["main"]
    transforms = [c for c in _calls(fused) if c.op.name == "layout_transform"]
    assert sorted((c.attrs.src_layout, c.attrs.dst_layout) for c in transforms) == [
        ("NCHW", "NCHW3c"), ("NCHW32c", "NCHW")]
    convs = [c for c in _calls(fused) if c.op.name in (*BLOCKED, WINOGRAD)]
    assert g.count_calls(fused)[WINOGRAD] == 17 and len(convs) == 53  # the 32x32 variant's stem is 3x3
    assert {c.attrs.out_layout for c in convs} == {"NCHW32c"}


@pytest.mark.slow
def test_resnet50_fallback_build_equals_the_interpreter(resnet50: tuple, no_packages) -> None:
    mod, params = resnet50
    lib = _build(mod, params)
    data = RNG.uniform(-1, 1, (1, 3, 32, 32)).astype("float32")
    expected = g.evaluate(mod, [data], params)
    np.testing.assert_allclose(_run(lib, data), expected, rtol=1e-4, atol=1e-4 * np.abs(expected).max())
