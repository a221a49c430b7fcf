"""``tunecli inspect``: config spaces and loop nests of a job; summary and plots of a log."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.engine.template_cases import SEED_SPACE
from tunecli.commands.tables import label_lines, wrap_items
from tunecli.engine.log.log_summary import inspect_log

from .conftest import Invoke

SEED_JOB = """\
name: seed
tasks:
  - template: tutorial/conv2d_no_batching
    args: {N: 1, H: 7, W: 7, CO: 512, CI: 512, KH: 3, KW: 3, stride: [1, 1], padding: [1, 1]}
  - template: tutorial/matmul
    args: [16, 16, 16]
tuner: {kind: xgb, n_trial: 10}
"""


def test_job_space_prints_like_tvm(invoke: Invoke, tmp_path: Path) -> None:
    job = tmp_path / "seed.yaml"
    job.write_text(SEED_JOB)
    result = invoke("inspect", str(job), "--task", "0")
    assert result.exit_code == 0, result.output
    assert result.stdout == ("# task 0: tutorial/conv2d_no_batching(1, 7, 7, 512, 512, 3, 3, (1,1), (1,1))\n"
                             "#   (231211008 FLOP)\n" + SEED_SPACE + "\n")


def test_job_config_loop_nest(invoke: Invoke, tmp_path: Path) -> None:
    job = tmp_path / "seed.yaml"
    job.write_text(SEED_JOB)
    result = invoke("inspect", str(job), "--task", "1", "--config", "7")
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0] == "# task 1: tutorial/matmul(16, 16, 16, float32)  (8192 FLOP)"
    assert "# config #7 tile_y=[-1,4] tile_x=[-1,2]" in lines
    nest = "\n".join(lines[lines.index("# config #7 tile_y=[-1,4] tile_x=[-1,2]") + 1:])
    assert nest.startswith("primfn main(A: float32[16, 16], B: float32[16, 16], C: float32[16, 16])")
    assert "for (i.outer, 0, 4)" in nest and "for (j.outer, 0, 8)" in nest

    bad = invoke("inspect", str(job), "--task", "1", "--config", "25")
    assert bad.exit_code == 2
    assert bad.stderr == (f"error: {job}: config 25 is not a valid config index of task 1 "
                          "(the space has 25 configs, indices 0..24)\n")
    missing = invoke("inspect", str(job), "--task", "2")
    assert missing.exit_code == 2
    assert missing.stderr == f"error: {job}: there is no task 2: the job has 2 task(s), numbered 0..1\n"


def test_log_summary_plot_and_png(invoke: Invoke, matmul_log: Path, tmp_path: Path) -> None:
    png = tmp_path / "plot.png"
    result = invoke("inspect", str(matmul_log), "--png", str(png))
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith(f"{matmul_log}: 3 records, errors: RUNTIME_DEVICE 1\n")
    assert "best GFLOPS so far" in result.stdout
    assert "0.0164 GFLOPS" in result.stdout  # 2*16^3 FLOP in 0.5 ms
    assert result.stdout.endswith(f"wrote {png}\n")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"

    as_json = json.loads(invoke("inspect", str(matmul_log), "--json").stdout)
    assert as_json["records"] == 3 and as_json["errors"] == {"RUNTIME_DEVICE": 1}
    [workload] = as_json["workloads"]
    assert (workload["trials"], workload["unit"], workload["best"]) == (3, "GFLOPS", 2 * 16**3 / 5e-4 / 1e9)


def test_a_re_measured_config_is_one_trial_at_its_lowest_cost(invoke: Invoke, matmul_log: Path,
                                                             tmp_path: Path) -> None:
    rows = [json.loads(line) for line in matmul_log.read_text().splitlines()]  # configs 3, 7, 9 (error)
    again_3, again_7 = json.loads(json.dumps(rows[0])), json.loads(json.dumps(rows[1]))
    again_3["result"][0] = [2.5e-4]  # config 3 re-measured in a quiet moment: now the best
    again_7["result"][0], again_7["result"][1] = [1e9], 4  # config 7's re-measurement failed
    log = tmp_path / "remeasured.log"
    log.write_text("".join(json.dumps(row) + "\n" for row in (*rows, again_3, again_7)))

    as_json = json.loads(invoke("inspect", str(log), "--json").stdout)
    assert as_json["records"] == 5 and as_json["errors"] == {"RUNTIME_DEVICE": 2}  # records
    [workload] = as_json["workloads"]
    assert (workload["trials"], workload["errors"]) == (3, {"RUNTIME_DEVICE": 1})  # configs
    assert workload["best"] == 2 * 16**3 / 2.5e-4 / 1e9
    [curve] = inspect_log(str(log)).workloads
    assert curve.costs == [2.5e-4, 5e-4, None]  # configs 3, 7, 9 in order of first appearance
    assert curve.best_so_far() == [2 * 16**3 / 2.5e-4 / 1e9] * 3

    text = invoke("inspect", str(log)).stdout
    assert text.startswith(f"{log}: 5 records, errors: RUNTIME_DEVICE 2\n")
    assert "0.0328 GFLOPS" in text


def test_options_that_do_not_fit_the_file_kind(invoke: Invoke, matmul_log: Path) -> None:
    result = invoke("inspect", str(matmul_log), "--config", "1")
    assert result.exit_code == 2
    assert "--task and --config apply to job files (.yaml), not to logs" in result.stderr


def test_without_the_plot_extra_the_summary_is_printed_and_png_names_the_extra(
        invoke: Invoke, matmul_log: Path, tmp_path: Path, monkeypatch) -> None:
    import sys

    for module in ("plotext", "matplotlib"):
        monkeypatch.setitem(sys.modules, module, None)  # what an install without tunecli[plot] gives
    result = invoke("inspect", str(matmul_log))
    assert result.exit_code == 0, result.output
    assert "0.0164 GFLOPS" in result.stdout and "best GFLOPS so far" not in result.stdout
    assert result.stderr == ("warning: the convergence plot needs plotext, which is part of the optional "
                             "extra tunecli[plot]: pip install 'tunecli[plot]'; the summary above is "
                             "complete\n")
    png = tmp_path / "plot.png"
    result = invoke("inspect", str(matmul_log), "--png", str(png))
    assert result.exit_code == 1 and result.stdout == "" and not png.exists()
    assert result.stderr == ("error: inspect --png needs matplotlib, which is part of the optional extra "
                             "tunecli[plot]: pip install 'tunecli[plot]'\n")


SMALLEST_JOB = "name: smallest\ntasks:\n  - template: tutorial/matmul\n    args: [16, 16, 16]\n"


def test_a_job_needs_no_tuner_to_be_inspected(invoke: Invoke, tmp_path: Path) -> None:
    job = tmp_path / "smallest.yaml"
    job.write_text(SMALLEST_JOB)
    result = invoke("inspect", str(job))
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("# task 0: tutorial/matmul(16, 16, 16, float32)  (8192 FLOP)\n")


def test_inspect_refuses_the_duplicate_tasks_tune_refuses(invoke: Invoke, tmp_path: Path) -> None:
    job = tmp_path / "twice.yaml"
    job.write_text(SMALLEST_JOB + "  - template: tutorial/matmul\n    args: {N: 16, L: 16, M: 16}\n")
    for command in (["inspect", str(job)], ["inspect", str(job), "--task", "0"], ["tune", str(job)]):
        result = invoke(*command)
        assert result.exit_code == 2
        assert result.stderr == (f"error: {job}:5: tasks[1]: the same task as tasks[0] "
                                 "(tutorial/matmul(16, 16, 16, 'float32'))\n")


def test_text_plot_legend_is_under_the_plot_and_plotext_notes_are_plain_warnings(
        invoke: Invoke, matmul_log: Path, tmp_path: Path) -> None:
    result = invoke("inspect", str(matmul_log))
    lines = result.stdout.splitlines()
    axis = max(i for i, line in enumerate(lines) if line.strip() == "trial")
    assert lines[axis + 1:] == ["", "  * tutorial/matmul(16, 16, 16, float32)"]  # below the plot, not on it
    assert max(len(line) for line in lines if str(tmp_path) not in line) <= 80

    # costs so large and so close that plotext draws them on one spot, and says so in colour
    row = json.loads(matmul_log.read_text().splitlines()[0])
    rows = []
    for index, cost in ((1, 1e13), (2, 1e13 + 0.002)):
        row["config"]["index"], row["result"][0] = index, [cost]
        row["input"][1] = "not_known_here"  # no FLOP count: the plot is in ms
        rows.append(json.dumps(row))
    close = tmp_path / "close.log"
    close.write_text("\n".join(rows) + "\n")
    result = invoke("inspect", str(close))
    assert result.exit_code == 0, result.output
    assert "\x1b[" not in result.stderr and "\x1b[" not in result.stdout
    assert result.stderr == ("warning: plotext.figure: the values on the left y axis are too close together "
                             "to be told apart, so they are drawn on a single spot\n")


def test_a_network_s_kernels_are_listed_in_lines_of_80_columns(invoke: Invoke, tmp_path: Path) -> None:
    pytest.importorskip("onnx")
    from tests.engine.job.tiny_network import INPUT, SHAPE, write_tiny_onnx

    onnx = write_tiny_onnx(tmp_path / "tiny.onnx")
    job = tmp_path / "net.yaml"
    shape = ", ".join(map(str, SHAPE))
    job.write_text(f"name: net\nmodel: {{onnx: {onnx}, input: {{{INPUT}: [{shape}]}}}}\n")
    result = invoke("inspect", str(job))
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("kernels: "))
    end = next(i for i in range(start + 1, len(lines)) if not lines[i].startswith("  "))
    listed = " ".join(line.strip() for line in lines[start:end])[len("kernels: "):].split(", ")
    view = json.loads(invoke("inspect", str(job), "--json").stdout)
    assert listed == [f"{name} x{n}" if n > 1 else name for name, n in view["kernels"].items()]
    assert all(len(line) <= 80 for line in lines[start:end]) and end - start > 1


def test_a_list_is_wrapped_between_its_items() -> None:
    assert wrap_items("kernels: ", ["a_kernel x2", "b", "c" * 30, "d"], 24) == [
        "kernels: a_kernel x2, b,", "  " + "c" * 30 + ",", "  d"]
    assert wrap_items("kernels: ", ["a", "b"], 80) == ["kernels: a, b"]
    assert wrap_items("kernels: ", [], 80) == ["kernels: "]


def test_a_label_is_broken_between_its_arguments() -> None:
    text = "  batch_matmul.x86(float32[4,16,64], float32[4,16,64], (4,16,16), float32, False, True):"
    assert label_lines(text, 80) == [
        "  batch_matmul.x86(float32[4,16,64], float32[4,16,64], (4,16,16), float32,", "    False, True):"]
    assert label_lines("  dense.x86(16, 256, 256, float32):", 80) == ["  dense.x86(16, 256, 256, float32):"]
    assert label_lines("a_name_without_arguments" * 5, 80) == ["a_name_without_arguments" * 5]


def small_bert_job(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, seq_len: str) -> Path:
    """A job of a one-layer BERT (hidden 64, 4 heads) at ``seq_len`` (YAML: one length or a list),
    its dense and batch_matmul tasks on their default configs (no package records, no nearest ones)."""
    monkeypatch.setenv("TUNECLI_TOPHUB", "NONE")
    monkeypatch.setenv("TUNECLI_NO_NEAREST", "1")
    job = tmp_path / "bert.yaml"
    job.write_text(f"name: bert\nmodel: {{name: bert-base, seq_len: {seq_len}, layers: 1, hidden: 64, "
                   "heads: 4}\nops: [dense, batch_matmul]\n")
    return job


def test_the_config_source_of_a_long_workload_fits_80_columns(invoke: Invoke, tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """A transformer's batch_matmul workloads are longer than a line: each is broken between its
    arguments, its source (here: default) on the line below."""
    job = small_bert_job(tmp_path, monkeypatch, "16")
    result = invoke("inspect", str(job))
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("configs ("))
    configs = lines[start:]
    assert all(len(line) <= 80 for line in configs), [line for line in configs if len(line) > 80]
    first = next(i for i, line in enumerate(configs) if line.startswith("  batch_matmul.x86("))
    assert configs[first:first + 3] == [
        "  batch_matmul.x86(float32[4,16,16], float32[4,16,16], (4,16,16), float32,", "    False, True):",
        "    default"]


def test_each_sequence_length_s_network_is_described(invoke: Invoke, tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """A text model of two sequence lengths: the header names both, and each length's network has
    its inputs, kernels, memory and configs, in lines of at most 80 columns."""
    job = small_bert_job(tmp_path, monkeypatch, "[16, 32]")
    result = invoke("inspect", str(job))
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert all(len(line) <= 80 for line in lines), [line for line in lines if len(line) > 80]
    assert lines[0].startswith("bert: bert-base (1, 16 | 32) float32")
    headings = [line for line in lines if line.startswith("network ")]
    assert [h.split(" float32")[0] for h in headings] == ["network bert-base (1, 16)",
                                                          "network bert-base (1, 32)"]
    inputs = [line for line in lines if line.startswith("inputs: ")]
    assert inputs == ["inputs: data [1, 16] int64", "inputs: data [1, 32] int64"]
    assert sum(line.startswith("configs (") for line in lines) == 2
    listed = [line for line in lines if line.startswith("kernels: ")]
    assert len(listed) == 2 and listed[1] == "kernels: those of the network above"  # the same fused kernels
    assert any("(4,32,32)" in line for line in lines) and any("(4,16,16)" in line for line in lines)
    view = json.loads(invoke("inspect", str(job), "--json").stdout)
    assert [n["inputs"]["data"][0] for n in view["networks"]] == [[1, 16], [1, 32]]
    first, second = view["networks"]
    assert second["intermediate_bytes"] > first["intermediate_bytes"] and first["kernel_calls"] > 0
    assert view["inputs"] == first["inputs"] and view["model"].startswith("bert-base (1, 16 | 32)")


def test_inspect_says_why_apply_builds_the_untuned_config(invoke: Invoke, tmp_path: Path) -> None:
    from tests.commands.test_best import _untuned_log

    log = _untuned_log(tmp_path, 0.98)
    job = tmp_path / "matmul.yaml"
    job.write_text(f"name: matmul\nlog: {log}\ntasks:\n"
                   "  - template: tutorial/matmul\n    args: [16, 16, 16]\n")
    result = invoke("inspect", str(job))
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    at = lines.index("# apply builds config #0 tile_y=[-1,1] tile_x=[-1,1]")
    assert lines[at + 1] == f"#   from log: {log}"
    assert lines[at + 2] == "#   the untuned config (default): config 7 is only 2.0% faster (margin 5%)"

    _untuned_log(tmp_path, 0.98, marked=3)  # a mark the untuned build no longer runs: not honoured
    lines = invoke("inspect", str(job)).stdout.splitlines()
    at = lines.index("# apply builds config #7 tile_y=[-1,4] tile_x=[-1,2]")
    why = " ".join(line.removeprefix("#").strip() for line in lines[at + 2:at + 6])
    assert why.startswith("the fastest record; config 3, marked untuned (default) by the tune, is no longer "
                          "what the untuned build runs")
