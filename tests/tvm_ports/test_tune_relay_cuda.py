"""Port of TVM's tutorial ``gallery/how_to/tune_with_autotvm/tune_relay_cuda.py`` with ``import tvm``
changed to ``import tunecli as tvm`` (and ``from tunecli import relay, autotvm``, ``import
tunecli.contrib.graph_executor as runtime``).

Edits other than imports are marked ``# EDIT:``: the network is ResNet-18 on a 3x32x32 image, each
task gets a few trials and the benchmark a few runs, to keep the test short; the log goes to
pytest's temporary directory; results are returned for the test's checks.  Without a GPU the
measuring part is skipped; everything before it runs: task extraction for ``cuda``, a tuner per
task, and ``relay.build`` under ``apply_history_best`` of a hand-written record, up to the executor,
which then says that no GPU is there.
"""

from __future__ import annotations

import logging
import os

import numpy as np
import pytest

import tunecli as tvm
import tunecli.contrib.graph_executor as runtime
from tunecli import autotvm, relay
from tunecli.autotvm.tuner import GATuner, GridSearchTuner, RandomTuner, XGBTuner
from tunecli.errors import DeviceError
from tunecli.relay import testing


def get_network(name, batch_size):
    """Get the symbol definition and random weight of a network"""
    input_shape = (batch_size, 3, 32, 32)  # EDIT: 32x32 instead of 224x224
    output_shape = (batch_size, 1000)

    if "resnet" in name:
        n_layer = int(name.split("-")[1])
        mod, params = testing.resnet.get_workload(
            num_layers=n_layer, batch_size=batch_size, dtype=dtype,
            image_shape=input_shape[1:],  # EDIT: the small image
        )
    elif "vgg" in name:
        n_layer = int(name.split("-")[1])
        mod, params = testing.vgg.get_workload(num_layers=n_layer, batch_size=batch_size, dtype=dtype)
    elif name == "mobilenet":
        mod, params = testing.mobilenet.get_workload(batch_size=batch_size, dtype=dtype)
    elif name == "squeezenet_v1.1":
        mod, params = testing.squeezenet.get_workload(batch_size=batch_size, version="1.1", dtype=dtype)
    else:  # EDIT: no inception_v3 (not in relay.testing here) and no MXNet model
        raise ValueError("Unsupported network: " + name)

    return mod, params, input_shape, output_shape


#### DEVICE CONFIG ####
target = tvm.target.cuda()

#### TUNING OPTION ####
network = "resnet-18"
log_file = "%s.log" % network  # noqa: UP031  (the tutorial's text)
dtype = "float32"

tuning_option = {
    "log_filename": log_file,
    "tuner": "xgb",
    "n_trial": 4,  # EDIT: 2000 in the tutorial
    "early_stopping": None,  # EDIT: 600 in the tutorial
    "measure_option": autotvm.measure_option(
        builder=autotvm.LocalBuilder(timeout=10),
        runner=autotvm.LocalRunner(number=20, repeat=3, timeout=4, min_repeat_ms=150),
    ),
}


def tune_tasks(
    tasks,
    measure_option,
    tuner="xgb",
    n_trial=1000,
    early_stopping=None,
    log_filename="tuning.log",
    use_transfer_learning=True,
):
    # create tmp log file
    tmp_log_file = log_filename + ".tmp"
    if os.path.exists(tmp_log_file):
        os.remove(tmp_log_file)

    for i, tsk in enumerate(reversed(tasks)):
        prefix = "[Task %2d/%2d] " % (i + 1, len(tasks))  # noqa: UP031

        # create tuner
        if tuner == "xgb" or tuner == "xgb-rank":
            tuner_obj = XGBTuner(tsk, loss_type="rank")
        elif tuner == "ga":
            tuner_obj = GATuner(tsk, pop_size=100)
        elif tuner == "random":
            tuner_obj = RandomTuner(tsk)
        elif tuner == "gridsearch":
            tuner_obj = GridSearchTuner(tsk)
        else:
            raise ValueError("Invalid tuner: " + tuner)

        if use_transfer_learning:
            if os.path.isfile(tmp_log_file):
                tuner_obj.load_history(autotvm.record.load_from_file(tmp_log_file))

        # do tuning
        tsk_trial = min(n_trial, len(tsk.config_space))
        tuner_obj.tune(
            n_trial=tsk_trial,
            early_stopping=early_stopping,
            measure_option=measure_option,
            callbacks=[
                autotvm.callback.progress_bar(tsk_trial, prefix=prefix),
                autotvm.callback.log_to_file(tmp_log_file),
            ],
        )

    # pick best records to a cache file
    autotvm.record.pick_best(tmp_log_file, log_filename)
    os.remove(tmp_log_file)


def tune_and_evaluate(tuning_opt):
    # extract workloads from relay program
    print("Extract tasks...")
    mod, params, input_shape, out_shape = get_network(network, batch_size=1)
    tasks = autotvm.task.extract_from_program(
        mod["main"], target=target, params=params, ops=(relay.op.get("nn.conv2d"),)
    )

    # run tuning tasks
    print("Tuning...")
    tune_tasks(tasks, **tuning_opt)

    # compile kernels with history best records
    with autotvm.apply_history_best(log_file):
        print("Compile...")
        with tvm.transform.PassContext(opt_level=3):
            lib = relay.build_module.build(mod, target=target, params=params)

        # load parameters
        dev = tvm.device(str(target), 0)
        module = runtime.GraphModule(lib["default"](dev))
        data_tvm = tvm.nd.array((np.random.uniform(size=input_shape)).astype(dtype))
        module.set_input("data", data_tvm)

        # evaluate
        print("Evaluate inference time cost...")
        print(module.benchmark(dev, number=1, repeat=10))  # EDIT: repeat=600 in the tutorial
        return module, data_tvm, lib, mod, params  # EDIT: for the test's checks


def _hand_written_tuning(tasks, measure_option, log_filename, **_):
    """Stands in for ``tune_tasks`` without a GPU: a tuner per task, as the tutorial makes them, and
    one record (config 0 of the first task, 0.1 ms) written as a tuner's callback would."""
    tuners = [XGBTuner(tsk, loss_type="rank") for tsk in reversed(tasks)]
    assert [t.task for t in tuners] == list(reversed(tasks))
    inp = autotvm.measure.MeasureInput(target, tasks[0], tasks[0].config_space.get(0))
    res = autotvm.measure.MeasureResult((1e-4,), 0, 1.0, 0.0)
    with open(log_filename, "w") as f:
        f.write(autotvm.record.encode(inp, res) + "\n")


def test_tune_relay_cuda_up_to_the_gpu(tmp_path, monkeypatch, caplog) -> None:
    """Everything before measuring: the cuda tasks, a tuner each, the build with the log's record."""
    if tvm.cuda(0).exist:
        pytest.skip("a GPU is here: test_tune_relay_cuda_flow runs the whole tutorial")
    monkeypatch.chdir(tmp_path)
    mod, params, _, _ = get_network(network, batch_size=1)
    tasks = autotvm.task.extract_from_program(mod["main"], target=target, params=params,
                                              ops=(relay.op.get("nn.conv2d"),))
    assert len(tasks) == 12 and {t.name for t in tasks} == {"conv2d_nchw.cuda"}
    assert all(t.target == target for t in tasks)
    monkeypatch.setitem(globals(), "tune_tasks", _hand_written_tuning)
    with caplog.at_level(logging.INFO, logger="autotvm"), pytest.raises(
            DeviceError, match=r"graph executor on cuda\(0\): cannot run the network"):
        tune_and_evaluate(tuning_option)
    assert "1 of 13 tasks tuned; 12 fell back: conv2d_nchw.cuda" in caplog.text  # the dense falls back too


@pytest.mark.slow
@pytest.mark.skipif(not tvm.cuda(0).exist, reason="no CUDA GPU (with cuda-bindings and a driver) here")
def test_tune_relay_cuda_flow(tmp_path, monkeypatch) -> None:
    """The tutorial on a GPU: tune each conv2d task a little, build with the log, run, compare."""
    monkeypatch.chdir(tmp_path)
    module, data, lib, mod, params = tune_and_evaluate(tuning_option)
    assert os.path.getsize(log_file) > 0
    assert all(k.object_format == "ptx" for k in lib.kernels.values())
    module.run()
    expected = relay.create_executor("debug", mod, params=params).evaluate()(data.numpy())
    np.testing.assert_allclose(module.get_output(0).numpy(), expected, rtol=1e-4, atol=1e-5)
