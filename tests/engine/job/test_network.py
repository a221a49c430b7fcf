"""The network of a model job: built-in models and ONNX files loaded, each bad input one message
naming the job's ``model`` field, and the tasks extracted with how often the network runs them."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from tunecli.engine.graph.extract import extract_from_program, task_occurrences
from tunecli.engine.job.network import extract_network_tasks, job_task_set, job_tasks, load_network
from tunecli.engine.job.network_models import MODELS
from tunecli.engine.job.spec import load_job
from tunecli.errors import JobError

from .tiny_network import INPUT, SHAPE, write_tiny_onnx

pytest.importorskip("onnx")


def _job(tmp_path: Path, text: str) -> str:
    path = tmp_path / "job.yaml"
    path.write_text(textwrap.dedent(text))
    return str(path)


def _load_error(tmp_path: Path, text: str) -> str:
    job = load_job(_job(tmp_path, text))
    with pytest.raises(JobError) as info:
        job_tasks(job)
    assert len(info.value.problems) == 1
    return info.value.problems[0]


#: The sizes a reduced transformer is loaded at (the form of the model, a fraction of its work).
SMALL = "layers: 1, hidden: 32, heads: 4"


@pytest.mark.parametrize("name", list(MODELS))
def test_every_builtin_model_loads_at_a_small_input(tmp_path: Path, name: str) -> None:
    model = MODELS[name]
    sizes = f", {SMALL}" if model.sizes else ""
    if model.is_text:
        job = load_job(_job(tmp_path, f"name: m\nmodel: {{name: {name}, seq_len: 8{sizes}}}\n"))
        expected = ((1, 8), "int64")
    else:
        job = load_job(_job(tmp_path, f"name: m\nmodel: {{name: {name}, image_shape: [3, 32, 32]{sizes}}}\n"))
        expected = ((1, 3, 32, 32), "float32")
    network = load_network(job)
    assert network.inputs == {model.input_name: expected}


def test_a_text_model_at_several_sequence_lengths_is_one_task_list(tmp_path: Path) -> None:
    """Each length is a network of its own; one log holds the tasks of all (each workload once)."""
    job = load_job(_job(tmp_path, f"name: b\nmodel: {{name: bert-base, seq_len: [8, 16], {SMALL}}}\n"))
    assert job.model.label == "bert-base (1, 8 | 16) float32, layers 1, hidden 32, heads 4"
    short, long = (load_network(job, shape) for shape in job.model.sample_shapes)
    assert (short.inputs["data"][0], long.inputs["data"][0]) == ((1, 8), (1, 16))
    assert short.label == "bert-base (1, 8) float32, layers 1, hidden 32, heads 4"
    found = job_task_set(job, short)
    merged = extract_network_tasks(job, long).tasks  # every length's tasks, as tune numbers them
    assert [t.task.workload for t in merged] == [t.workload for t in found.tasks]
    each = []
    for n in (8, 16):  # each length alone
        one = load_job(_job(tmp_path, f"name: b\nmodel: {{name: bert-base, seq_len: {n}, {SMALL}}}\n"))
        each.append(extract_network_tasks(one, load_network(one)).tasks)
    assert [t.workload for t in found.tasks] == [t.task.workload for t in each[0] + each[1]]
    assert found.weights == tuple(float(t.occurrences) for t in each[0] + each[1])
    # bert's dense layers (M = the sequence length) have dense_pack.x86 as an alternative
    alternatives = {found.tasks[i].name for group in found.alternatives for i in group}
    assert alternatives == {"dense.x86", "dense_pack.x86"}
    assert {t.name for t in found.tasks} == {"dense.x86", "dense_pack.x86", "batch_matmul.x86"}


@pytest.mark.parametrize(("model", "message"), [
    ("{name: vit-b16, image_shape: [3, 32, 48]}", "vit-b16 takes square RGB images [3, N, N]"),
    ("{name: vit-b16, image_shape: [3, 40, 40]}",
     "vit-b16 takes square RGB images [3, N, N] (N a multiple of 16), got [3, 40, 40]"),
])
def test_an_image_vit_cannot_take(tmp_path: Path, model: str, message: str) -> None:
    problem = _load_error(tmp_path, f"name: v\nmodel: {model}\n")
    assert problem.startswith(f"{tmp_path / 'job.yaml'}:2: model: ") and message in problem


def test_resnet18_tasks_and_occurrences_are_extract_from_programs(tmp_path: Path) -> None:
    job = load_job(_job(tmp_path, "name: r\nmodel: {name: resnet-18, image_shape: [3, 32, 32]}\n"))
    network = load_network(job)
    found = extract_network_tasks(job, network).tasks
    expected = extract_from_program(network.mod, network.params, job.target, ops=job.ops)
    counts = task_occurrences(network.mod, network.params, job.target, ops=job.ops)
    assert [t.task.workload for t in found] == [t.workload for t in expected]
    assert [t.occurrences for t in found] == [counts[t.workload] for t in expected]
    # relay.testing's ResNet-18: the stem, 16 3x3 convolutions in the blocks, 4 1x1 shortcuts
    assert sum(t.occurrences for t in found if t.task.name.startswith("conv2d")) == 21
    tasks, weights = job_tasks(job, network)
    assert weights == [float(t.occurrences) for t in found]


def test_a_winograd_convolution_is_one_operator_of_two_alternative_tasks(tmp_path: Path) -> None:
    onnx = write_tiny_onnx(tmp_path / "tiny.onnx")  # two 3x3 stride-1 convolutions and a dense layer
    job = load_job(_job(tmp_path, f"""\
        name: t
        model: {{onnx: {onnx}}}
        ops: [conv2d, contrib_conv2d_NCHWc_winograd, dense]
        tasks:
          - template: conv2d_NCHWc_winograd.x86
            args: [[TENSOR, [1, 4, 8, 8], float32], [TENSOR, [8, 4, 3, 3], float32], [1, 1], [1, 1, 1, 1],
                   [1, 1], NCHW, NCHW, float32]
            weight: 2
        """))
    found = job_task_set(job)
    pair = ["conv2d_NCHWc.x86", "conv2d_NCHWc_winograd.x86"]
    assert [t.name for t in found.tasks] == pair + pair + ["dense.x86", "dense_pack.x86"]
    assert found.alternatives == ((0, 1), (2, 3), (4, 5))
    assert found.weights == (1.0, 3.0, 1.0, 1.0, 1.0, 1.0)  # the listed task: 2 calls only Winograd runs
    tasks, weights = job_tasks(job)
    assert [t.workload for t in tasks] == [t.workload for t in found.tasks] and weights == list(found.weights)


def test_ops_selects_the_operators_whose_calls_become_tasks(tmp_path: Path) -> None:
    text = "name: r\nmodel: {name: resnet-18, image_shape: [3, 32, 32]}\nops: [dense]\n"
    job = load_job(_job(tmp_path, text))
    assert [t.task.name for t in extract_network_tasks(job, load_network(job)).tasks] == ["dense.x86",
                                                                                          "dense_pack.x86"]


def test_extra_tasks_come_after_the_networks(tmp_path: Path) -> None:
    onnx = write_tiny_onnx(tmp_path / "tiny.onnx")
    job = load_job(_job(tmp_path, f"""\
        name: t
        model: {{onnx: {onnx}}}
        tasks:
          - template: tutorial/matmul
            args: [8, 8, 8, float32]
            weight: 3
        """))
    tasks, weights = job_tasks(job)
    assert [t.name for t in tasks] == ["conv2d_NCHWc.x86", "conv2d_NCHWc.x86", "dense.x86", "dense_pack.x86",
                                       "tutorial/matmul"]
    assert weights == [1.0, 1.0, 1.0, 1.0, 3.0]


def test_a_corrupt_onnx_file(tmp_path: Path) -> None:
    (tmp_path / "bad.onnx").write_bytes(b"\x08\x07garbage that is no protobuf \xff\xfe")
    message = _load_error(tmp_path, f"name: b\nmodel: {{onnx: {tmp_path / 'bad.onnx'}}}\n")
    assert message.startswith(f"{tmp_path / 'job.yaml'}:2: model: ")
    assert "bad.onnx" in message


def test_an_unsupported_operator(tmp_path: Path) -> None:
    from onnx import helper

    from tests.engine.graph.frontend.onnx_models import make_model

    model = make_model([helper.make_node("Det", ["x"], ["y"], name="mix")],  # no converter for Det
                       {"x": ((2, 2), "float32")}, {"y": "float32"})
    (tmp_path / "det.onnx").write_bytes(model.SerializeToString())
    message = _load_error(tmp_path, f"name: b\nmodel: {{onnx: {tmp_path / 'det.onnx'}}}\n")
    assert message.startswith(f"{tmp_path / 'job.yaml'}:2: model: ")
    assert "Det" in message and "mix" in message


def test_a_wrong_input_name_or_shape(tmp_path: Path) -> None:
    onnx = write_tiny_onnx(tmp_path / "tiny.onnx")
    message = _load_error(tmp_path, f"name: b\nmodel: {{onnx: {onnx}, input: {{data: [1, 4, 8, 8]}}}}\n")
    assert message.startswith(f"{tmp_path / 'job.yaml'}:2: model: ") and "'data'" in message
    message = _load_error(tmp_path, f"name: b\nmodel: {{onnx: {onnx}, input: {{{INPUT}: [1, 4, 8]}}}}\n")
    assert message.startswith(f"{tmp_path / 'job.yaml'}:2: model: ") and INPUT in message
    good = load_network(load_job(_job(tmp_path, f"name: g\nmodel: {{onnx: {onnx}}}\n")))
    assert good.inputs == {INPUT: (SHAPE, "float32")}


def test_a_dynamic_input_without_a_shape_says_how_to_give_it_in_the_job(tmp_path: Path) -> None:
    from onnx import helper

    from tests.engine.graph.frontend.onnx_models import make_model

    inputs = {"ids": (("batch", "seq"), "float32"), "mask": ((1, "seq"), "float32")}
    model = make_model([helper.make_node("Add", ["ids", "mask"], ["y"])], inputs, {"y": "float32"})
    onnx = tmp_path / "dyn.onnx"
    onnx.write_bytes(model.SerializeToString())
    message = _load_error(tmp_path, f"name: b\nmodel: {{onnx: {onnx}, input: {{ids: [1, 8]}}}}\n")
    assert message == (f"{tmp_path / 'job.yaml'}:2: model: the ONNX model leaves input shapes open; give "
                       f"them in model.input, a number for each named dimension: input: {{mask: [1, seq]}}")
    message = _load_error(tmp_path, f"name: b\nmodel: {{onnx: {onnx}}}\n")
    assert message.endswith("input: {ids: [batch, seq], mask: [1, seq]}")


def test_an_image_the_model_cannot_take(tmp_path: Path) -> None:
    message = _load_error(tmp_path, "name: b\nmodel: {name: vgg-16, image_shape: [3, 8, 8]}\n")
    assert message.startswith(f"{tmp_path / 'job.yaml'}:2: model: ")


def test_a_network_without_the_ops(tmp_path: Path) -> None:
    onnx = write_tiny_onnx(tmp_path / "tiny.onnx")
    message = _load_error(tmp_path, f"name: b\nmodel: {{onnx: {onnx}}}\nops: [batch_matmul]\n")
    assert message == (f"{tmp_path / 'job.yaml'}:2: model: {onnx} has no call of nn.batch_matmul with a "
                       "tunable implementation for llvm")


def test_a_listed_task_the_network_calls_too_adds_its_weight_to_the_call_count(tmp_path: Path) -> None:
    onnx = write_tiny_onnx(tmp_path / "tiny.onnx")
    job = load_job(_job(tmp_path, f"""\
        name: t
        model: {{onnx: {onnx}}}
        tasks:
          - template: dense.x86
            args: [1, 5, 8, float32]
            weight: 2
          - template: tutorial/matmul
            args: [8, 8, 8, float32]
        """))
    tasks, weights = job_tasks(job)
    assert [t.name for t in tasks] == ["conv2d_NCHWc.x86", "conv2d_NCHWc.x86", "dense.x86", "dense_pack.x86",
                                       "tutorial/matmul"]
    assert tasks[2].workload == ("dense.x86", 1, 5, 8, "float32")
    assert weights == [1.0, 1.0, 3.0, 1.0, 1.0]


def test_token_ids_cover_the_table_they_index_and_other_integers_are_masks(tmp_path: Path) -> None:
    """apply's inputs: ids drawn over the embedding's rows (all of BERT's vocabulary; a token type
    table of 2 rows), an integer input that indexes nothing (an attention mask) 0 or 1."""
    import numpy as np
    from onnx import helper

    from tests.engine.graph.frontend.onnx_models import make_model

    job = load_job(_job(tmp_path, f"name: b\nmodel: {{name: bert-base, seq_len: 64, {SMALL}}}\n"))
    network = load_network(job)
    assert network.index_rows == {"data": 30522}
    ids = network.random_inputs(0)["data"]
    assert ids.dtype == np.int64 and ids.max() >= 1000 and ids.min() >= 0 and ids.max() < 30522

    nodes = [helper.make_node("Gather", ["words", "input_ids"], ["w"]),
             helper.make_node("Gather", ["types", "token_type_ids"], ["t"]),
             helper.make_node("Add", ["w", "t"], ["x"]),
             helper.make_node("Cast", ["attention_mask"], ["m"], to=1),
             helper.make_node("Unsqueeze", ["m", "axis"], ["m3"]),
             helper.make_node("Mul", ["x", "m3"], ["y"])]
    rng = np.random.default_rng(0)
    names = ("input_ids", "token_type_ids", "attention_mask")
    model = make_model(nodes, {name: ([1, 16], "int64") for name in names}, {"y": "float32"},
                       {"words": rng.standard_normal((100, 8)).astype("float32"),
                        "types": rng.standard_normal((2, 8)).astype("float32"),
                        "axis": np.array([2], dtype="int64")})
    (tmp_path / "ids.onnx").write_bytes(model.SerializeToString())
    network = load_network(load_job(_job(tmp_path, f"name: o\nmodel: {{onnx: {tmp_path / 'ids.onnx'}}}\n")))
    assert network.index_rows == {"input_ids": 100, "token_type_ids": 2}
    inputs = network.random_inputs(0)
    assert inputs["input_ids"].max() >= 50 and inputs["input_ids"].max() < 100
    assert set(np.unique(inputs["token_type_ids"])) == {0, 1} == set(np.unique(inputs["attention_mask"]))
