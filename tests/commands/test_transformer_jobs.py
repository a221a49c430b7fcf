"""Transformer model jobs through the CLI (``model: bert-base``, ``gpt2``, ``vit-b16``): token ids
in, tasks of the dense layers and attention's batched products tuned into one log for every
sequence length of the job, and ``apply`` building one library per length whose output is
onnxruntime's for the same network written as ONNX."""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np
import pytest

from tunecli.engine.graph.frontend.onnx_export import to_onnx
from tunecli.engine.job.network import job_tasks, load_network
from tunecli.engine.job.spec import load_job
from tunecli.engine.log.record import encode
from tunecli.engine.measure.result import MeasureErrorNo, MeasureInput, MeasureResult
from tunecli.runtime import cpu, load_module

from .conftest import Invoke, write_model_job

pytest.importorskip("onnx")
onnxruntime = pytest.importorskip("onnxruntime")

ROOT = Path(__file__).resolve().parents[2]

#: A reduced BERT-base: its form (embeddings, post-norm layers, erf GELU) at a fraction of the work.
SMALL_BERT = "{name: bert-base, seq_len: [8, 16], layers: 1, hidden: 32, heads: 4}"


def _record(task, index: int, cost: float) -> str:
    inp = MeasureInput(task.target, task, task.config_space.get(index % len(task.config_space)))
    return encode(inp, MeasureResult((cost,), MeasureErrorNo.NO_ERROR, 0.1, time.time()))


def _check_libraries_against_onnxruntime(job_path: Path, libraries: list[Path], high: int) -> None:
    """Each exported library (one per sample shape of the job) gives onnxruntime's output for the
    network written as ONNX, on token ids over the whole vocabulary (``high``) or an image."""
    job = load_job(str(job_path))
    rng = np.random.default_rng(3)
    for shape, library in zip(job.model.sample_shapes, libraries, strict=True):
        network = load_network(job, shape)
        [(name, (dims, dtype))] = network.inputs.items()
        data = (rng.integers(0, high, dims) if dtype == "int64" else rng.standard_normal(dims)).astype(dtype)
        session = onnxruntime.InferenceSession(to_onnx(network.mod, network.params),
                                               providers=["CPUExecutionProvider"])
        [expected] = session.run(None, {name: data})
        module = load_module(str(library))["default"](cpu())
        module.set_input(name, data)
        module.run()
        got = module.get_output(0).numpy()
        assert got.shape == expected.shape
        assert float(np.abs(got - expected).max() / np.abs(expected).max()) < 1e-4, library


def test_a_bert_job_at_two_sequence_lengths_applies_one_library_each(invoke: Invoke, tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    job = write_model_job(tmp_path, SMALL_BERT, name="bert", timeout=30)
    tasks, weights = job_tasks(load_job(str(job)))
    # per length: 3 dense layers (each dense.x86 and dense_pack.x86) and attention's 2 batch_matmuls
    dense = ["dense.x86", "dense_pack.x86"]
    assert [t.name for t in tasks[:8]] == [*dense, "batch_matmul.x86", "batch_matmul.x86", *dense, *dense]
    assert len(tasks) == 16 and weights[:2] == [4.0, 4.0]  # Q, K, V and the attention output
    log = tmp_path / "logs" / "bert.log"
    log.parent.mkdir()
    log.write_text("".join(_record(t, 1, 1e-5) + "\n" for t in tasks))  # one log for both lengths

    applied = invoke("apply", str(job), "--export", str(tmp_path / "out" / "bert.so"), "--json")
    assert applied.exit_code == 0, applied.output
    report = json.loads(applied.stdout)
    reports = [report, *report["others"]]
    assert [r["model"] for r in reports] == ["bert-base (1, 8) float32, layers 1, hidden 32, heads 4",
                                             "bert-base (1, 16) float32, layers 1, hidden 32, heads 4"]
    libraries = [tmp_path / "out" / "bert.seq8.so", tmp_path / "out" / "bert.seq16.so"]
    assert [r["export"] for r in reports] == [str(p) for p in libraries]
    for r in reports:
        assert r["ok"] and r["correct"] and r["summary"] == "5 of 5 tasks tuned"
        assert r["onnxruntime"] == "runs the model written as ONNX"
        for lat in r["latencies"]:
            assert lat["tuned"] > 0 and lat["untuned"] > 0 and lat["onnxruntime"] > 0
    assert report["ok"]
    _check_libraries_against_onnxruntime(job, libraries, high=30522)


def test_tune_a_text_model_job(invoke: Invoke, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    job = write_model_job(tmp_path, "{name: gpt2, seq_len: 8, layers: 1, hidden: 32, heads: 4}", n_trial=1,
                          name="gpt2", extra="ops: [batch_matmul]\n", timeout=30)
    tuned = invoke("tune", str(job), "--json")
    assert tuned.exit_code == 0, tuned.output
    summary = json.loads(tuned.stdout)
    assert summary["ok"] and summary["model"] == "gpt2 (1, 8) float32, layers 1, hidden 32, heads 4"
    # the attention scores Q K^T and their product with V, over batch * heads = 4
    assert [(t["template"], t["measured"], t["weight"]) for t in summary["tasks"]] == [
        ("batch_matmul.x86", 1, 1.0), ("batch_matmul.x86", 1, 1.0)]
    assert len(Path("logs/gpt2.log").read_text().splitlines()) == 2


@pytest.mark.parametrize(("model", "name", "high"), [
    ("{name: bert-base, seq_len: [16, 32], layers: 2, hidden: 64, heads: 4}", "bert", 30522),
    ("{name: gpt2, seq_len: 16, layers: 2, hidden: 64, heads: 4}", "gpt2", 50257),
    ("{name: vit-b16, image_shape: [3, 32, 32], layers: 2, hidden: 64, heads: 4}", "vit", 0),
], ids=["bert", "gpt2", "vit"])
@pytest.mark.slow
def test_a_reduced_transformer_tuned_and_applied(invoke: Invoke, tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch, model: str, name: str,
                                                 high: int) -> None:
    monkeypatch.chdir(tmp_path)
    job = write_model_job(tmp_path, model, n_trial=2, name=name, timeout=30)
    tuned = invoke("tune", str(job), "--json")
    assert tuned.exit_code == 0, tuned.output
    assert all(t["measured"] == 2 for t in json.loads(tuned.stdout)["tasks"])
    applied = invoke("apply", str(job), "--export", str(tmp_path / f"{name}.so"), "--json")
    assert applied.exit_code == 0, applied.output
    reports = (lambda r: [r, *r["others"]])(json.loads(applied.stdout))
    assert all(r["ok"] and r["correct"] for r in reports)
    shapes = load_job(str(job)).model.sample_shapes
    libraries = ([tmp_path / f"{name}.seq{s[0]}.so" for s in shapes] if len(shapes) > 1
                 else [tmp_path / f"{name}.so"])
    _check_libraries_against_onnxruntime(job, libraries, high=high)


def test_shipped_bert_jobs_load(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    full = load_job("jobs/bert.yaml")
    assert full.model.name == "bert-base" and full.model.sample_shapes == ((128,),) and not full.model.sizes
    small = load_job("jobs/bert_small.yaml")
    assert small.model.sizes["layers"] == 2 and len(small.model.sample_shapes) == 2
