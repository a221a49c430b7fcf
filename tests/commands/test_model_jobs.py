"""Model jobs through the CLI: ``tune`` extracts and tunes every task of a network (and resumes),
``apply`` builds it with the best configs, checks it, times it and exports it, ``inspect`` lists
its tasks and kernels; the graph tuner's output is what ``apply`` builds under; bad model input is
one message and exit code 2."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

from tunecli.engine.job.model_spec import graph_log_path
from tunecli.engine.job.network import job_tasks
from tunecli.engine.job.spec import load_job
from tunecli.engine.log.record import encode
from tunecli.engine.measure.result import MeasureErrorNo, MeasureInput, MeasureResult

from .conftest import Invoke, write_model_job

pytest.importorskip("onnx")

from tests.engine.job.tiny_network import INPUT, SHAPE, write_tiny_onnx  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]

def _tiny_model(tmp_path: Path) -> str:
    onnx = write_tiny_onnx(tmp_path / "tiny.onnx")
    return f"{{onnx: {onnx}, input: {{{INPUT}: [{', '.join(map(str, SHAPE))}]}}}}"


def test_tune_resume_and_inspect_a_tiny_onnx_network(invoke: Invoke, tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    job = write_model_job(tmp_path, _tiny_model(tmp_path))
    tuned = invoke("tune", str(job), "--json")
    assert tuned.exit_code == 0, tuned.output
    summary = json.loads(tuned.stdout)
    assert summary["model"] == str(tmp_path / "tiny.onnx") and summary["ok"]
    assert [(t["template"], t["measured"], t["weight"]) for t in summary["tasks"]] == [
        ("conv2d_NCHWc.x86", 2, 1.0), ("conv2d_NCHWc.x86", 2, 1.0), ("dense.x86", 2, 1.0),
        ("dense_pack.x86", 2, 1.0)]  # the dense layer's two x86 implementations, as TVM extracts them
    assert "all tasks 8/8" in tuned.stderr  # the network total beside each task's line

    again = invoke("tune", str(job), "--json")  # resumes per task: every task is done
    assert again.exit_code == 0, again.output
    assert [t["measured"] for t in json.loads(again.stdout)["tasks"]] == [0, 0, 0, 0]
    assert again.stderr.count("resuming, 2 of 2 trials are already in the log") == 4

    shown = invoke("inspect", str(job))
    assert shown.exit_code == 0, shown.output
    text = " ".join(shown.stdout.split())  # as read, whatever the line wrapping
    # 5 groups, plus the layout transforms the chosen blocks need (AlterOpLayout)
    kernels = re.search(r"(\d+) fused kernels, (\d+) calls per run", text)
    assert kernels and int(kernels[1]) == int(kernels[2]) >= 5 and "intermediate memory" in text
    assert re.search(r"fused_nn_\w*conv2d\w*_add_nn_relu", text)  # the conv kernel with its epilogue
    view = json.loads(invoke("inspect", str(job), "--json").stdout)
    assert [(op["tasks"], op["occurrences"], round(op["share"], 3)) for op in view["operators"]] == [
        ([0], 1, 0.333), ([1], 1, 0.666), ([2, 3], 1, 0.001)]
    assert [t["occurrences"] for t in view["tasks"]] == [1, 1, 1, 1]
    assert view["weight_bytes"] > 0 and 0 < view["intermediate_bytes"] <= view["unplanned_bytes"]


def test_apply_checks_times_and_exports_a_tiny_onnx_network(invoke: Invoke, tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    job = write_model_job(tmp_path, _tiny_model(tmp_path))
    tasks, _ = job_tasks(load_job(str(job)))
    log = tmp_path / "logs" / "net.log"
    log.parent.mkdir()
    log.write_text("".join(_record(t, 1, 1e-5) + "\n" for t in tasks))
    export = tmp_path / "out" / "tiny.so"
    applied = invoke("apply", str(job), "--export", str(export), "--json")
    assert applied.exit_code == 0, applied.output
    report = json.loads(applied.stdout)
    assert report["ok"] and report["correct"] and report["checked_against"] == "onnxruntime"
    assert report["onnxruntime"] == f"runs {tmp_path / 'tiny.onnx'}"
    assert report["summary"] == "3 of 3 tasks tuned" and report["kernels"] >= 5
    assert report["log"] == "logs/net.log" and report["export"] == str(export)
    assert [lat["threads"] for lat in report["latencies"]][0] == 1
    for lat in report["latencies"]:
        assert lat["tuned"] > 0 and lat["untuned"] > 0 and lat["onnxruntime"] > 0

    data = np.random.default_rng(1).uniform(size=SHAPE).astype("float32")
    np.save(tmp_path / "data.npy", data)
    script = textwrap.dedent(f"""
        import numpy as np
        import tunecli.runtime
        m = tunecli.runtime.load_module({str(export)!r})["default"](tunecli.runtime.cpu())
        m.set_input({INPUT!r}, np.load({str(tmp_path / "data.npy")!r}))
        m.run()
        np.save({str(tmp_path / "out.npy")!r}, m.get_output(0).numpy())
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=ROOT,
                          env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}, timeout=120)
    assert done.returncode == 0, done.stderr
    import onnxruntime

    session = onnxruntime.InferenceSession(str(tmp_path / "tiny.onnx"), providers=["CPUExecutionProvider"])
    [expected] = session.run(None, {INPUT: data})
    np.testing.assert_allclose(np.load(tmp_path / "out.npy"), expected, rtol=1e-4, atol=1e-5)


def test_inspect_one_task_of_a_network_and_its_loop_nest(invoke: Invoke, tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    job = write_model_job(tmp_path, _tiny_model(tmp_path))
    shown = invoke("inspect", str(job), "--task", "2", "--config", "3")
    assert shown.exit_code == 0, shown.output
    assert shown.stdout.startswith("# task 2: dense.x86(1, 5, 8, float32)  (80 FLOP)\nConfigSpace (len=48")
    assert "# config #3 " in shown.stdout and "primfn main(" in shown.stdout
    missing = invoke("inspect", str(job), "--task", "4")
    assert missing.exit_code == 2
    assert f"error: {job}: there is no task 4: the network has 4 task(s), numbered 0..3" in missing.stderr


def test_inspect_lists_a_winograd_task_under_its_convolution(invoke: Invoke, tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    job = write_model_job(tmp_path, _tiny_model(tmp_path),
                     extra="ops: [conv2d, contrib_conv2d_NCHWc_winograd, dense]\n")
    shown = invoke("inspect", str(job))
    assert shown.exit_code == 0, shown.output
    rows = [line.replace("│", " ").split() for line in shown.stdout.splitlines()]  # either table form
    shares = [row for row in rows if row and row[-1].endswith("%")]
    assert [row[-1] for row in shares] == ["33.3%", "66.6%", "0.1%"]  # one share per operator
    assert sum(1 for row in rows if "alt" in row) == 3  # two Winograd tasks, the packed dense
    text = " ".join(shown.stdout.split())
    assert "3 tunable operators, 6 tasks; alt: another task of the operator above" in text


def _record(task, index: int, cost: float) -> str:
    inp = MeasureInput(task.target, task, task.config_space.get(index))
    return encode(inp, MeasureResult((cost,), MeasureErrorNo.NO_ERROR, 0.1, time.time()))


def test_apply_builds_under_the_graph_tuners_records(invoke: Invoke, tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """The log holds only the dense task; the graph tuner's file beside it holds the two
    convolutions: all three are tuned only because apply reads that file."""
    monkeypatch.chdir(tmp_path)
    job = write_model_job(tmp_path, _tiny_model(tmp_path), extra="graph_tuner: dp\n")
    tasks, _ = job_tasks(load_job(str(job)))
    log = tmp_path / "kernels.log"
    log.write_text(_record(tasks[2], 0, 1e-6) + "\n")
    graph_log = graph_log_path(log)
    assert graph_log == tmp_path / "kernels.graph.log"
    graph_log.write_text("".join(_record(t, 0, 1e-5) + "\n" for t in tasks[:2]))
    result = invoke("apply", str(job), "--log", str(log))
    assert result.exit_code == 0, result.output
    out = " ".join(result.stdout.split())  # the table's footer may wrap
    assert re.search(r"build: 3 of 3 tasks tuned; \d+ kernels; built in", out)
    joined = "".join(result.stdout.split())  # a path longer than the terminal wraps inside itself
    assert f"graphtuner'schoice:{graph_log}" in joined and "check: ok against onnxruntime" in out
    assert "is older than" not in result.stderr

    # Records added to the log after the graph tuner ran (more tuning, a re-measure): apply says
    # the graph tuner's choice is stale.
    later = graph_log.stat().st_mtime + 10
    os.utime(log, (later, later))
    stale = invoke("apply", str(job), "--log", str(log))
    assert stale.exit_code == 0, stale.output
    assert f"warning: {graph_log} is older than {log}" in " ".join(stale.stderr.split())


@pytest.mark.slow
def test_graph_tuner_job_end_to_end(invoke: Invoke, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    job = write_model_job(tmp_path, _tiny_model(tmp_path), n_trial=6,
                     extra="graph_tuner: {kind: dp, max_sch_num: 4, min_exec_num: 10}\n")
    tuned = invoke("tune", str(job), "--json")
    assert tuned.exit_code == 0, tuned.output
    graph = json.loads(tuned.stdout)["graph"]
    assert graph["kind"] == "dp" and graph["error"] is None and graph["convolutions"] == 2
    assert graph["path"] == "logs/net.graph.log" and graph["predicted"] <= graph["kernel_only"] + 1e-12
    assert len(Path(graph["path"]).read_text().splitlines()) == 2  # one record per convolution
    applied = invoke("apply", str(job), "--json")
    assert applied.exit_code == 0, applied.output
    report = json.loads(applied.stdout)
    assert report["graph_log"] == "logs/net.graph.log" and report["correct"]


@pytest.mark.slow
def test_resnet18_at_a_small_image_tuned_and_applied(invoke: Invoke, tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    job = write_model_job(tmp_path, "{name: resnet-18, image_shape: [3, 32, 32]}", n_trial=2, name="r18")
    tuned = invoke("tune", str(job), "--json")
    assert tuned.exit_code == 0, tuned.output
    tasks = json.loads(tuned.stdout)["tasks"]
    assert len(tasks) == 14 and sum(t["weight"] for t in tasks) == 23  # 21 convolutions, 1 dense twice
    applied = invoke("apply", str(job), "--json")
    assert applied.exit_code == 0, applied.output
    report = json.loads(applied.stdout)
    assert report["summary"] == "13 of 13 tasks tuned" and report["checked_against"] == "interpreter"
    assert report["correct"] and report["onnxruntime"] == "runs the model written as ONNX"
    for lat in report["latencies"]:
        assert lat["tuned"] > 0 and lat["untuned"] > 0 and lat["onnxruntime"] > 0


@pytest.mark.parametrize(("model", "message"), [
    ("{onnx: missing.onnx}", ":2: model.onnx: missing.onnx: no such ONNX file"),
    ("{onnx: corrupt.onnx}", ":2: model: ONNX file 'corrupt.onnx' is not a valid ONNX model"),
    ("{onnx: tiny.onnx, input: {data: [1, 4, 8, 8]}}", ":2: model: "),
    ("{onnx: tiny.onnx, input: {image: [1, 4, 8]}}", ":2: model: "),
    ("resnet-17", ":2: model: unknown model 'resnet-17'"),
])
def test_bad_model_input_is_one_message_and_exit_code_2(invoke: Invoke, tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch, model: str,
                                                        message: str) -> None:
    monkeypatch.chdir(tmp_path)
    write_tiny_onnx(tmp_path / "tiny.onnx")
    (tmp_path / "corrupt.onnx").write_bytes(b"\x08\x07 no protobuf \xff\xfe")
    job = write_model_job(tmp_path, model)
    for command in ("tune", "apply", "inspect"):
        result = invoke(command, str(job))
        assert result.exit_code == 2, (command, result.output)
        [line] = result.stderr.strip().splitlines()
        assert line.startswith(f"error: {job}{message}"), (command, line)
