"""The runtime module calls of TVM's tutorials: ``mod.get_function(name)``, ``mod[name]``,
``mod.entry_name``, ``imported_modules`` (a GPU kernel's device code, printed with
``get_source()``), ``export_library`` then ``tvm.runtime.load_module`` (and the AutoTVM era's
``tvm.module.load``), and ``tvm.runtime.enabled``."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import tunecli as tvm
from tunecli import te
from tunecli.errors import ArgumentError


def build_scale(target: str = "llvm", name: str = "scale"):
    a = te.placeholder((64,), name="a")
    b = te.compute((64,), lambda i: a[i] * 3.0 + 1.0, name="b")
    s = te.create_schedule(b.op)
    if target == "cuda":
        bx, tx = s[b].split(b.op.axis[0], factor=32)
        s[b].bind(bx, te.thread_axis("blockIdx.x"))
        s[b].bind(tx, te.thread_axis("threadIdx.x"))
    return tvm.build(s, [a, b], target, name=name)


def run(func) -> np.ndarray:
    x = tvm.nd.array(np.arange(64, dtype="float32"))
    out = tvm.nd.empty((64,))
    func(x, out)
    return out.numpy()


WANT = np.arange(64, dtype="float32") * 3.0 + 1.0


def test_functions_by_name_from_a_built_module():
    mod = build_scale()
    assert mod.entry_name == "scale" and mod.type_key == "llvm"
    np.testing.assert_allclose(run(mod.get_function("scale")), WANT)
    np.testing.assert_allclose(run(mod["scale"]), WANT)
    np.testing.assert_allclose(run(mod.entry_func), WANT)
    assert mod.imported_modules == []


@pytest.mark.parametrize("suffix", [".so", ".tar"])
def test_exported_then_loaded_back_and_called_by_name(tmp_path: Path, suffix: str):
    path = tmp_path / f"scale{suffix}"
    build_scale().export_library(str(path))
    loaded = tvm.runtime.load_module(str(path))
    np.testing.assert_allclose(run(loaded["scale"]), WANT)
    old = tvm.module.load(str(path))
    np.testing.assert_allclose(run(old.get_function("scale")), WANT)
    timer = loaded.time_evaluator(loaded.entry_name, tvm.cpu(0), number=2)
    x, out = tvm.nd.array(np.ones(64, "float32")), tvm.nd.empty((64,))
    assert timer(x, out).mean > 0


def test_a_function_the_module_does_not_have_is_named_in_the_error():
    mod = build_scale()
    with pytest.raises(ArgumentError, match="no function named 'main'.*'scale'"):
        mod.get_function("main")
    with pytest.raises(ArgumentError, match="must be a str"):
        mod[0]


def test_a_gpu_kernels_device_code_is_its_imported_module():
    mod = build_scale("cuda", name="scale_gpu")
    (dev_module,) = mod.imported_modules
    assert dev_module.type_key == "cuda" and dev_module.imported_modules == []
    source = dev_module.get_source()
    assert ".entry scale_gpu(" in source and source == mod.get_source("ptx")


def test_which_kinds_the_runtime_supports():
    assert tvm.runtime.enabled("llvm") and tvm.runtime.enabled("llvm -mcpu=core-avx2")
    assert tvm.module.enabled("cpu")
    assert not tvm.runtime.enabled("opencl") and not tvm.runtime.enabled("vulkan")
    with pytest.raises(ArgumentError, match="runtime.enabled"):
        tvm.runtime.enabled("")


def test_a_relay_library_function_by_name():
    from tunecli import relay
    from tunecli.contrib import graph_executor

    x = relay.var("x", shape=(2, 3), dtype="float32")
    func = relay.Function([x], relay.nn.relu(x))
    lib = relay.build(tvm.IRModule.from_expr(func), target="llvm")
    gmod = graph_executor.GraphModule(lib.get_function("default")(tvm.cpu(0)))
    data = np.array([[-1, 2, -3], [4, -5, 6]], dtype="float32")
    gmod.set_input("x", data)
    gmod.run()
    np.testing.assert_allclose(gmod.get_output(0).numpy(), np.maximum(data, 0))


def test_an_object_saved_then_linked_by_create_shared_loads_as_the_module(tmp_path: Path):
    from tunecli.contrib import cc

    mod = build_scale()
    mod.save(str(tmp_path / "scale.o"))
    assert (tmp_path / "scale.o").read_bytes() == mod.object_bytes()
    cc.create_shared(str(tmp_path / "scale.so"), [str(tmp_path / "scale.o")])
    loaded = tvm.runtime.load_module(str(tmp_path / "scale.so"))
    assert loaded.entry_name == "scale" and loaded.arg_specs == mod.arg_specs
    np.testing.assert_allclose(run(loaded), WANT)


def test_a_gpu_kernels_device_code_saved_as_ptx(tmp_path: Path):
    mod = build_scale("cuda", name="scale_ptx")
    mod.imported_modules[0].save(str(tmp_path / "scale.ptx"))
    assert (tmp_path / "scale.ptx").read_text() == mod.get_source("ptx")
