"""A TVM user's network scripts, written against ``import tunecli as tvm``: a ``relay.testing``
network built with ``relay.build`` and run through ``graph_executor`` (also after
``export_library`` and ``runtime.load_module``); its conv2d tasks extracted, tuned a little and
the network built under ``apply_history_best``; the graph tuner (``DPTuner``/``PBQPTuner``) run
on kernel records and the network built under ``apply_graph_best``; and the same for a ``cuda``
target, as far as this machine allows.  Every built network must compute what the interpreter
computes."""

from __future__ import annotations

import logging
import re
from pathlib import Path

import numpy as np
import pytest

import tunecli as tvm
from tunecli import autotvm, relay
from tunecli.autotvm.graph_tuner import DPTuner, PBQPTuner
from tunecli.contrib import graph_executor
from tunecli.errors import DeviceError

IMAGE = (1, 3, 40, 40)
CONV = relay.op.get("nn.conv2d")
PRETUNED = Path(__file__).resolve().parents[3] / ".." / "shared" / "reference" / "tophub" / "llvm_v0.04.log"


def resnet(image: tuple = IMAGE) -> tuple:
    return relay.testing.resnet.get_workload(num_layers=18, batch_size=image[0], image_shape=image[1:])


def expected(mod: object, params: dict, data: np.ndarray) -> np.ndarray:
    return relay.create_executor("debug", mod=mod, params=params).evaluate()(data)


def run_library(lib: object, data: np.ndarray, dev: tvm.Device | None = None) -> np.ndarray:
    module = graph_executor.GraphModule(lib["default"](dev or tvm.cpu()))
    module.set_input("data", tvm.nd.array(data))
    module.run()
    return module.get_output(0).numpy()


def built(mod: object, params: dict, context: object, target: str = "llvm") -> object:
    with context, tvm.transform.PassContext(opt_level=3):
        return relay.build(mod, target=target, params=params)


def random_image(seed: int = 0, shape: tuple = IMAGE) -> np.ndarray:
    return np.random.default_rng(seed).uniform(-1, 1, size=shape).astype("float32")


def tune_each(tasks: list, log: str, trials: int = 2) -> None:
    """A random tuner per task, a couple of trials each, every record logged."""
    option = autotvm.measure_option(builder=autotvm.LocalBuilder(),
                                    runner=autotvm.LocalRunner(number=1, repeat=2))
    for i, task in enumerate(tasks):
        n = min(trials, len(task.config_space))
        autotvm.tuner.RandomTuner(task).tune(n_trial=n, measure_option=option, callbacks=[
            autotvm.callback.progress_bar(n, prefix=f"[task {i + 1}/{len(tasks)}] "),
            autotvm.callback.log_to_file(log)])


@pytest.mark.slow
def test_build_run_export_and_reload(tmp_path: Path) -> None:
    mod, params = resnet()
    assert "nn.conv2d" in mod.astext(show_meta_data=False)
    lib = built(mod, params, autotvm.FallbackContext())
    data = random_image(1)
    out = run_library(lib, data)
    np.testing.assert_allclose(out, expected(mod, params, data), rtol=1e-4, atol=1e-6)
    path = str(tmp_path / "resnet18.so")
    lib.export_library(path)
    reloaded = graph_executor.GraphModule(tvm.runtime.load_module(path)["default"](tvm.cpu()))
    reloaded.run(data=tvm.nd.array(data))
    tvm.testing.assert_allclose(reloaded.get_output(0).numpy(), out, atol=1e-5)


@pytest.mark.slow
def test_tuned_kernels_build_a_network_that_computes_the_same(tmp_path: Path,
                                                              caplog: pytest.LogCaptureFixture) -> None:
    mod, params = resnet()
    tasks = autotvm.task.extract_from_program(mod["main"], target="llvm", params=params, ops=(CONV,))
    assert len(tasks) == 12 and all(t.name.startswith("conv2d") for t in tasks)
    log = str(tmp_path / "kernels.log")
    tune_each(tasks, log)
    assert len(list(autotvm.record.load_from_file(log))) >= len(tasks)
    data = random_image(2)
    with caplog.at_level(logging.INFO, logger="autotvm"):
        lib = built(mod, params, autotvm.apply_history_best(log))
    # every convolution is answered by the log (the classifier by the pre-tuned package, or falls back)
    assert re.search(r"1[23] of 13 tasks tuned", caplog.text) and "fell back: conv2d" not in caplog.text
    np.testing.assert_allclose(run_library(lib, data), expected(mod, params, data), rtol=1e-4, atol=1e-5)


@pytest.mark.skipif(not PRETUNED.is_file(), reason=f"TVM's pre-tuned x86 log is not at {PRETUNED}")
@pytest.mark.parametrize("solver", [DPTuner, PBQPTuner])
def test_the_graph_tuner_picks_one_record_per_convolution(tmp_path: Path, solver: type) -> None:
    mod, _ = relay.testing.resnet.get_workload(num_layers=18, batch_size=1)  # the log's 224x224 layers
    tuner = solver(mod["main"], {"data": (1, 3, 224, 224)}, str(PRETUNED), [CONV], "llvm")
    tuner.benchmark_layout_transform(min_exec_num=200)
    tuner.run()
    out = str(tmp_path / "graph.log")
    tuner.write_opt_sch2record_file(out)
    chosen = list(autotvm.record.load_from_file(out))
    assert len(chosen) == 21 and {inp.task.name for inp, _ in chosen} == {"conv2d_NCHWc.x86"}
    with autotvm.apply_graph_best(out), tvm.target.Target("llvm"):
        first = chosen[0][0]
        answer = autotvm.DispatchContext.current.query(tvm.target.Target.current(), first.task.workload)
    assert answer.index == first.config.index


@pytest.mark.slow
def test_a_graph_tuned_network_computes_what_the_untuned_one_does(tmp_path: Path) -> None:
    image = (1, 3, 32, 32)
    mod, params = resnet(image)
    tasks = autotvm.task.extract_from_program(mod["main"], target="llvm", params=params, ops=(CONV,))
    kernels, graph_log = str(tmp_path / "kernels.log"), str(tmp_path / "graph.log")
    tune_each(tasks, kernels)
    tuner = DPTuner(mod["main"], {"data": image}, kernels, [CONV], "llvm")
    tuner.benchmark_layout_transform(min_exec_num=200)
    tuner.run()
    tuner.write_opt_sch2record_file(graph_log)
    data = random_image(3, image)
    graph_tuned = run_library(built(mod, params, autotvm.apply_graph_best(graph_log)), data)
    untuned = run_library(built(mod, params, autotvm.FallbackContext()), data)
    np.testing.assert_allclose(graph_tuned, untuned, rtol=1e-4, atol=1e-5)


def test_a_cuda_network_up_to_running_it(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """Extraction, a tuner per task, one record, the build; running it needs a GPU."""
    if tvm.cuda(0).exist:
        pytest.skip("a GPU is here: test_a_cuda_network_tuned_and_run runs the whole flow")
    mod, params = resnet()
    tasks = autotvm.task.extract_from_program(mod["main"], target="cuda", params=params, ops=(CONV,))
    assert len(tasks) == 12 and {t.name for t in tasks} == {"conv2d_nchw.cuda"}
    tuners = [autotvm.tuner.XGBTuner(t, loss_type="rank") for t in tasks]
    assert [t.task for t in tuners] == tasks
    log = str(tmp_path / "cuda.log")
    record = (autotvm.MeasureInput(tasks[0].target, tasks[0], tasks[0].config_space.get(0)),
              autotvm.MeasureResult((2e-4,), 0, 1.0, 0.0))
    Path(log).write_text(autotvm.record.encode(*record) + "\n")
    with caplog.at_level(logging.INFO, logger="autotvm"):
        lib = built(mod, params, autotvm.apply_history_best(log), target="cuda")
    # the other convolutions with kernels wider than 1x1 take the logged record's config, moved into
    # their spaces; the 1x1 ones and the dense layer have no record of their kind and fall back
    assert "1 of 13 tasks tuned; 7 chosen from the nearest records; 5 fell back" in caplog.text
    with pytest.raises(DeviceError, match=r"cuda\(0\)"):
        run_library(lib, random_image(4), tvm.cuda(0))


@pytest.mark.slow
@pytest.mark.skipif(not tvm.cuda(0).exist, reason="no CUDA GPU (with cuda-bindings and a driver) here")
def test_a_cuda_network_tuned_and_run(tmp_path: Path) -> None:
    mod, params = resnet()
    tasks = autotvm.task.extract_from_program(mod["main"], target="cuda", params=params, ops=(CONV,))
    log, scratch = str(tmp_path / "cuda.log"), str(tmp_path / "cuda.log.all")
    option = autotvm.measure_option(builder=autotvm.LocalBuilder(timeout=10),
                                    runner=autotvm.LocalRunner(number=10, repeat=2, timeout=4))
    for task in reversed(tasks):
        tuner = autotvm.tuner.XGBTuner(task, loss_type="rank")
        if Path(scratch).is_file():
            tuner.load_history(autotvm.record.load_from_file(scratch))
        tuner.tune(n_trial=3, measure_option=option, callbacks=[autotvm.callback.log_to_file(scratch)])
    autotvm.record.pick_best(scratch, log)
    lib = built(mod, params, autotvm.apply_history_best(log), target="cuda")
    assert all(k.object_format == "ptx" for k in lib.kernels.values())
    data = random_image(5)
    out = run_library(lib, data, tvm.cuda(0))
    np.testing.assert_allclose(out, expected(mod, params, data), rtol=1e-4, atol=1e-5)
