"""``autotvm.task.extract_from_program`` through the TVM faces: which tasks the built-in networks give
on x86, filtered by operator, for a module or its main function, and across several networks."""

from __future__ import annotations

import pytest

import tunecli as tvm
from tunecli import autotvm, relay
from tunecli.errors import GraphError

CONV2D, CONV3D = relay.op.get("nn.conv2d"), relay.op.get("nn.conv3d")
TRANSPOSED, DENSE = relay.op.get("nn.conv2d_transpose"), relay.op.get("nn.dense")


def names(tasks: list) -> list[str]:
    return [t.name for t in tasks]


@pytest.fixture(scope="module")
def resnet18() -> tuple:
    return relay.testing.resnet.get_workload(num_layers=18, batch_size=1)


@tvm.testing.requires_x86
def test_resnet18_tasks_by_operator_for_the_module_and_its_main_function(resnet18: tuple) -> None:
    mod, params = resnet18
    for program in (mod, mod["main"]):
        convs = autotvm.task.extract_from_program(program, target="llvm", params=params, ops=(CONV2D,))
        assert names(convs) == ["conv2d_NCHWc.x86"] * 12
        dense = autotvm.task.extract_from_program(program, target="llvm", params=params, ops=(DENSE,))
        assert names(dense) == ["dense.x86", "dense_pack.x86"]  # the classifier: unpacked and packed
        both = autotvm.task.extract_from_program(program, target="llvm", params=params, ops=(CONV2D, DENSE))
        assert [t.workload for t in both] == [t.workload for t in convs + dense]
    everything = autotvm.task.extract_from_program(mod, target="llvm", params=params)
    assert len(everything) == 14


def test_resnet3d_gives_one_conv3d_task_per_distinct_convolution() -> None:
    mod, params = relay.testing.resnet_3d.get_workload(num_layers=18, batch_size=1)
    tasks = autotvm.task.extract_from_program(mod, target="llvm", params=params, ops=(CONV3D,))
    # the stem, two in the first stage (3x3x3 and the 1x1x1 shortcut), three in each later stage
    assert names(tasks) == ["conv3d_ncdhw.x86"] * 12
    stem = tasks[0]
    assert stem.args == (
        ("TENSOR", (1, 3, 16, 112, 112), "float32"),
        ("TENSOR", (64, 3, 3, 7, 7), "float32"),
        (1, 2, 2),
        (1, 3, 3, 1, 3, 3),
        (1, 1, 1),
        "float32",
    )
    assert stem.flop == 2 * 64 * 16 * 56 * 56 * 3 * 3 * 7 * 7
    assert all(len(t.config_space) > 1 for t in tasks)
    assert autotvm.task.extract_from_program(mod, target="llvm", params=params, ops=(CONV2D,)) == []


def test_dcgan_gives_a_transposed_convolution_task_per_layer() -> None:
    mod, params = relay.testing.dcgan.get_workload(batch_size=1)
    tasks = autotvm.task.extract_from_program(mod, target="llvm", params=params, ops=(TRANSPOSED,))
    assert names(tasks) == ["conv2d_transpose_nchw.x86"] * 4
    channels = [(t.args[0][1][1], t.args[1][1][1]) for t in tasks]
    assert channels == [(1024, 512), (512, 256), (256, 128), (128, 3)]
    assert {t.args[2:] for t in tasks} == {((2, 2), (1, 1, 1, 1), "float32", (0, 0))}
    assert mod["main"].checked_type.ret_type.shape == (1, 3, 64, 64)


def test_several_networks_share_their_tasks_once(resnet18: tuple) -> None:
    mobilenet = relay.testing.mobilenet.get_workload(batch_size=1)
    alone = autotvm.task.extract_from_program(
        mobilenet[0], target="llvm", params=mobilenet[1], ops=(CONV2D, DENSE)
    )
    assert len(alone) == 21  # 19 convolutions (10 of them depthwise), the classifier twice
    mods, params = [resnet18[0], mobilenet[0]], [resnet18[1], mobilenet[1]]
    tasks = autotvm.task.extract_from_multiple_program(mods, params, target="llvm", ops=(CONV2D,))
    assert len(tasks) == 12 + 19
    again = autotvm.task.extract_from_multiple_program(
        [resnet18[0]] * 2, [resnet18[1]] * 2, "llvm", ops=(CONV2D,)
    )
    assert len(again) == 12


def test_cuda_dense_tasks_follow_the_dtypes() -> None:
    def workload(dtype: str, out_dtype: str) -> tuple:
        data = relay.var("data", shape=[1, 16], dtype=dtype)
        weight = relay.var("weight", shape=[32, 16], dtype=dtype)
        return relay.testing.create_workload(relay.nn.dense(data, weight, out_dtype=out_dtype))

    for dtypes, name in (
        (("float32", "float32"), "dense_small_batch.gpu"),
        (("int8", "int32"), "dense_int8.cuda"),
    ):
        mod, params = workload(*dtypes)
        assert names(autotvm.task.extract_from_program(mod, target="cuda", params=params, ops=(DENSE,))) == [
            name
        ]


def test_an_operator_the_registry_lacks_is_refused_by_name() -> None:
    with pytest.raises(GraphError, match="unknown operator 'nn.conv4d'"):
        relay.op.get("nn.conv4d")
