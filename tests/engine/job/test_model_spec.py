"""The model part of the job schema (``model:``, ``ops:``, ``graph_tuner:``): the forms it accepts,
and every mistake reported with the file, the line and the field."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from tunecli.engine.graph_tuner.graph_tuner_kinds import GRAPH_TUNERS
from tunecli.engine.job.model_spec import DEFAULT_OPS, GraphTunerSpec, tunable_ops
from tunecli.engine.job.network_models import MODELS
from tunecli.engine.job.spec import load_job
from tunecli.errors import JobError


def _job(tmp_path: Path, text: str) -> str:
    path = tmp_path / "job.yaml"
    path.write_text(textwrap.dedent(text))
    return str(path)


def _problems(tmp_path: Path, text: str) -> tuple[str, ...]:
    with pytest.raises(JobError) as info:
        load_job(_job(tmp_path, text))
    return info.value.problems


def test_a_model_name_is_a_job_without_tasks(tmp_path: Path) -> None:
    job = load_job(_job(tmp_path, "name: r\nmodel: resnet-18\n"))
    assert job.tasks == () and job.model is not None
    assert (job.model.name, job.model.batch_size, job.model.image_shape, job.model.dtype) == (
        "resnet-18", 1, None, "float32")
    assert job.ops == DEFAULT_OPS and job.graph_tuner is None
    assert job.model.label == "resnet-18 (1, 3, 224, 224) float32"


def test_a_model_mapping_with_sizes_ops_and_a_graph_tuner(tmp_path: Path) -> None:
    job = load_job(_job(tmp_path, """\
        name: m
        model: {name: mobilenet, batch_size: 2, image_shape: [3, 64, 64], dtype: float32}
        ops: [conv2d, nn.dense, conv2d]
        graph_tuner: {kind: pbqp, max_sch_num: 5, min_exec_num: 20}
        """))
    assert (job.model.name, job.model.batch_size, job.model.image_shape) == ("mobilenet", 2, (3, 64, 64))
    assert job.ops == ("nn.conv2d", "nn.dense")
    assert job.graph_tuner == GraphTunerSpec("pbqp", max_sch_num=5, min_exec_num=20)
    job = load_job(_job(tmp_path, "name: m\nmodel: vgg-16\ngraph_tuner: dp\n"))
    assert job.graph_tuner == GraphTunerSpec("dp")


def test_an_onnx_model_with_input_shapes_and_extra_tasks(tmp_path: Path) -> None:
    (tmp_path / "m.onnx").write_bytes(b"not read by the schema")
    job = load_job(_job(tmp_path, f"""\
        name: o
        model: {{onnx: {tmp_path / "m.onnx"}, input: {{data: [1, 3, 32, 32]}}}}
        tasks:
          - template: dense.x86
            args: {{N: 1, K: 8, M: 8}}
        """))
    assert job.model.onnx == str(tmp_path / "m.onnx") and job.model.inputs == {"data": (1, 3, 32, 32)}
    assert len(job.tasks) == 1


@pytest.mark.parametrize(("text", "message"), [
    ("model: resnet-17", "job.yaml:2: model: unknown model 'resnet-17' (built-in models: resnet-18"),
    ("model: 18", "job.yaml:2: model: expected a string, got '18'"),
    ("model: {name: resnet-18, onnx: m.onnx}",
     "job.yaml:2: model: give either name (a built-in model) or onnx"),
    ("model: {batch_size: 1}", "job.yaml:2: model: give either name (a built-in model) or onnx"),
    ("model: {name: resnet-18, image_shape: [224, 224]}",
     "job.yaml:2: model.image_shape: expected [channels, height, width], got [224, 224]"),
    ("model: {name: resnet-18, image_shape: [3, 0, 224]}",
     "job.yaml:2: model.image_shape[1]: expected an integer >= 1, got 0"),
    ("model: {name: resnet-18, batch_size: 0}",
     "job.yaml:2: model.batch_size: expected an integer >= 1, got 0"),
    ("model: {name: resnet-18, dtype: int8}", "job.yaml:2: model.dtype: expected one of float32, float64"),
    ("model: {name: resnet-18, input: {data: [1, 3, 8, 8]}}",
     "job.yaml:2: model.input: applies to ONNX models; a built-in model takes batch_size and image_shape"),
    ("model: {onnx: missing.onnx}", "job.yaml:2: model.onnx: missing.onnx: no such ONNX file"),
    ("model: {onnx: ., input: {x: [1]}}", "job.yaml:2: model.onnx: .: is not a file"),
    ("model: {nam: resnet-18}", "job.yaml:2: model.nam: unknown field (expected one of: name, batch_size"),
    ("model: resnet-18\nops: [softmax]", "job.yaml:3: ops[0]: expected a tunable operator (nn.conv2d"),
    ("model: resnet-18\nops: []", "job.yaml:3: ops: expected at least one operator"),
    ("model: resnet-18\ngraph_tuner: greedy",
     "job.yaml:3: graph_tuner: expected one of dp, pbqp, got 'greedy'"),
    ("model: resnet-18\ngraph_tuner: {max_sch_num: 4}",
     "job.yaml:3: graph_tuner: missing required field 'kind'"),
    ("model: resnet-18\ngraph_tuner: {kind: dp, min_exec_num: 0}",
     "job.yaml:3: graph_tuner.min_exec_num: expected an integer >= 1, got 0"),
    ("tasks: [{template: dense.x86, args: [1, 8, 8]}]\ngraph_tuner: dp",
     "job.yaml:3: graph_tuner: applies to model jobs: give a model too"),
    ("tasks: [{template: dense.x86, args: [1, 8, 8]}]\nops: [dense]",
     "job.yaml:3: ops: applies to model jobs"),
    ("target: llvm -mtriple=aarch64-linux-gnu\nmodel: resnet-18\ngraph_tuner: dp\n"
     "measure: {runner: {kind: rpc, key: pi, tracker: 'localhost:9190'}}",
     "job.yaml:4: graph_tuner: the graph tuner chooses among x86 NCHWc layouts"),
    ("tuner: {n_trial: 2}", "job.yaml:1: missing required field 'tasks' (or 'model', a network to tune)"),
])
def test_each_bad_model_field_is_named_with_its_line(tmp_path: Path, text: str, message: str) -> None:
    problems = _problems(tmp_path, "name: bad\n" + text + "\n")
    assert any(p.startswith(str(tmp_path / message)) for p in problems), problems


def test_the_registries_are_what_messages_list(tmp_path: Path) -> None:
    problems = _problems(tmp_path, "name: bad\nmodel: nope\nops: [nope]\ngraph_tuner: nope\n")
    assert ", ".join(MODELS) in problems[0]
    assert ", ".join(tunable_ops()) in problems[1]
    assert ", ".join(GRAPH_TUNERS) in problems[2]
    assert len(problems) == 3  # every problem of the file at once


def test_a_text_model_takes_sequence_lengths_and_transformer_sizes(tmp_path: Path) -> None:
    job = load_job(_job(tmp_path, "name: b\nmodel: bert-base\n"))
    assert job.model.sample_shapes == ((128,),) and job.model.label == "bert-base (1, 128) float32"
    job = load_job(_job(tmp_path, "name: b\nmodel: {name: gpt2, seq_len: [32, 128], layers: 2, hidden: 64, "
                                  "heads: 4}\n"))
    assert job.model.seq_lens == (32, 128) and job.model.sizes == {"layers": 2, "hidden": 64, "heads": 4}
    assert job.model.sample_shapes == ((32,), (128,))
    assert job.model.label == "gpt2 (1, 32 | 128) float32, layers 2, hidden 64, heads 4"
    assert job.model.single((128,)).label == "gpt2 (1, 128) float32, layers 2, hidden 64, heads 4"
    job = load_job(_job(tmp_path, "name: v\nmodel: {name: vit-b16, image_shape: [3, 64, 64], layers: 2}\n"))
    assert job.model.sample_shapes == ((3, 64, 64),) and job.model.sizes == {"layers": 2}
    assert "nn.batch_matmul" in job.ops  # attention's batched products are tuned by default


@pytest.mark.parametrize(("text", "message"), [
    ("model: {name: bert-base, image_shape: [3, 32, 32]}",
     "job.yaml:2: model.image_shape: bert-base takes token ids, not images: give seq_len"),
    ("model: {name: resnet-18, seq_len: 128}",
     "job.yaml:2: model.seq_len: resnet-18 takes images, not token ids: give image_shape"),
    ("model: {name: bert-base, seq_len: 513}",
     "job.yaml:2: model.seq_len: expected an integer <= 512, got 513"),
    ("model: {name: gpt2, seq_len: []}", "job.yaml:2: model.seq_len: expected a sequence length or a list"),
    ("model: {name: gpt2, seq_len: [16, 16]}",
     "job.yaml:2: model.seq_len[1]: sequence length 16 is given twice"),
    ("model: {name: bert-base, seq_len: [0]}",
     "job.yaml:2: model.seq_len[0]: expected an integer >= 1, got 0"),
    ("model: {name: resnet-18, layers: 2}",
     "job.yaml:2: model.layers: applies to the built-in transformers (bert-base, gpt2, vit-b16), not "
     "resnet-18"),
    ("model: {name: bert-base, hidden: 100}",
     "job.yaml:2: model.hidden: hidden 100 must be a multiple of heads 12"),
    ("model: {name: bert-base, heads: 0}", "job.yaml:2: model.heads: expected an integer >= 1, got 0"),
    ("model: {onnx: m.onnx, seq_len: 8}", "job.yaml:2: model.seq_len: applies to built-in models"),
])
def test_each_bad_text_model_field_is_named_with_its_line(tmp_path: Path, text: str, message: str) -> None:
    (tmp_path / "m.onnx").write_bytes(b"not read by the schema")
    problems = _problems(tmp_path, "name: bad\n" + text.replace("m.onnx", str(tmp_path / "m.onnx")) + "\n")
    assert any(p.startswith(str(tmp_path / message)) for p in problems), problems


def test_every_problem_of_a_text_model_at_once(tmp_path: Path) -> None:
    problems = _problems(tmp_path, "name: bad\nmodel: {name: bert-base, image_shape: [3, 8, 8], layers: 0, "
                                   "hidden: 66, heads: 4, seq_len: [8, 8]}\n")
    fields = [p.split(": ")[1] for p in problems]
    assert fields == ["model.image_shape", "model.seq_len[1]", "model.layers", "model.heads"], problems
