"""EfficientNet-B0 (``efficientnet-b0``): B0's stage table of MBConv blocks with squeeze-and-excitation
and swish; it computes in onnxruntime (through its ONNX export) and when built what the interpreter
computes, and a model job may name it."""

from __future__ import annotations

import textwrap
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from tunecli.engine import graph as g
from tunecli.engine.graph.build_module import build
from tunecli.engine.graph.models import efficientnet
from tunecli.engine.graph.passes import PassContext
from tunecli.engine.job.network import job_tasks
from tunecli.engine.job.spec import load_job


def _calls(mod: g.IRModule, name: str) -> list[g.Call]:
    return [n for n in g.post_order(mod["main"]) if isinstance(n, g.Call) and n.op.name == name]


def test_b0_has_the_papers_blocks_squeeze_excitation_and_swish() -> None:
    mod, params = efficientnet.get_workload(image_shape=(3, 224, 224))
    counts = g.count_calls(mod["main"])
    # 16 blocks (15 with an expansion): stem, expand, depthwise, se_reduce, se_expand, project, head.
    assert counts["nn.conv2d"] == 1 + 15 + 16 * 4 + 1
    # swish after stem, expand, depthwise, se_reduce and head; one sigmoid gate per block
    assert counts["sigmoid"] == 1 + 15 + 16 + 16 + 1 + 16 and counts["multiply"] == counts["sigmoid"]
    assert counts["add"] == 9 and counts["nn.global_avg_pool2d"] == 16 + 1
    depthwise = [c for c in _calls(mod, "nn.conv2d") if c.attrs.groups > 1]
    assert [c.attrs.kernel_size[0] for c in depthwise] == [3, 3, 3, 5, 5, 3, 3, 3, 5, 5, 5, 5, 5, 5, 5, 3]
    assert params["b2_1_expand_conv_weight"].shape == (96, 16, 1, 1)
    assert params["b2_1_se_reduce_weight"].shape == (4, 96, 1, 1)
    assert params["b2_1_se_expand_weight"].shape == (96, 4, 1, 1)
    assert params["b7_1_project_conv_weight"].shape == (320, 1152, 1, 1)
    assert params["head_conv_weight"].shape == (1280, 320, 1, 1)
    assert mod["main"].body.checked_type == g.TensorType((1, 1000), "float32")


def test_the_gate_scales_every_pixel_of_its_channel() -> None:
    x = g.var("data", shape=(1, 8, 5, 5), dtype="float32")
    out = efficientnet.squeeze_excitation(x, "se", 8, 2)
    mod, params = efficientnet.create_workload(g.Function(g.free_vars(out), out))
    data = np.random.default_rng(1).standard_normal((1, 8, 5, 5)).astype("float32")
    got = np.asarray(g.evaluate(mod, inputs={**params, "data": data}))
    ratio = got / data
    assert np.allclose(ratio, ratio[:, :, :1, :1], rtol=1e-5)
    assert ((ratio > 0) & (ratio < 1)).all() and np.ptp(ratio[0, :, 0, 0]) > 0


@pytest.fixture(scope="module")
def small() -> tuple[g.IRModule, dict, np.ndarray, np.ndarray]:
    mod, params = efficientnet.get_workload(image_shape=(3, 32, 32))
    data = np.random.default_rng(0).uniform(-1, 1, (1, 3, 32, 32)).astype("float32")
    out, values = g.evaluate_nodes(mod["main"], [data], params)
    logits = values[mod["main"].body.args[0]]
    assert np.isfinite(out).all() and np.ptp(logits.astype(np.float64)) > 0
    return mod, params, data, out


def test_onnxruntime_computes_what_the_interpreter_computes(small: tuple) -> None:
    pytest.importorskip("onnx")
    onnxruntime = pytest.importorskip("onnxruntime")
    from tunecli.engine.graph.frontend.onnx_export import to_onnx

    mod, params, data, expected = small
    session = onnxruntime.InferenceSession(to_onnx(mod, params), providers=["CPUExecutionProvider"])
    [got] = session.run(None, {"data": data})
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-7)


def test_built_untuned_it_computes_what_the_interpreter_computes(small: tuple, no_packages: None) -> None:
    mod, params, data, expected = small
    with PassContext(opt_level=3):
        lib = build(mod, "llvm", params=params)
    assert not lib.summary.tuned and not lib.summary.nearest
    m = lib["default"](None)
    m.set_input("data", data)
    m.run()
    np.testing.assert_allclose(m.get_output(0).numpy(), expected, rtol=1e-4, atol=1e-6)
    # swish and the gate (broadcast over the pixels) are epilogues of the convolutions
    elementwise = [k for k in lib.kernels if ("sigmoid" in k or "multiply" in k) and "conv2d" not in k]
    assert elementwise == [] and any("conv2d_NCHWc_add_sigmoid_multiply" in k for k in lib.kernels)


def test_a_model_job_tunes_its_convolutions_and_classifier(tmp_path: Path) -> None:
    path = tmp_path / "job.yaml"
    path.write_text(textwrap.dedent("""\
        name: e
        model: {name: efficientnet-b0, image_shape: [3, 32, 32]}
        """))
    tasks, weights = job_tasks(load_job(str(path)))
    names = Counter(t.name for t in tasks)
    assert set(names) == {"conv2d_NCHWc.x86", "depthwise_conv2d_NCHWc.x86", "dense.x86", "dense_pack.x86"}
    assert names["depthwise_conv2d_NCHWc.x86"] >= 5 and names["dense.x86"] == 1
    assert sum(w for t, w in zip(tasks, weights, strict=True) if "conv2d" in t.name) == 81
