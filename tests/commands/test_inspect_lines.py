"""``inspect`` of a model job in 80 columns when its configs come from the nearest records: each
source (``nearest: <the record's workload> (package ..., measured on ...)``) longer than a line
is broken between its arguments and its note wrapped, whole."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.commands.conftest import Invoke


def test_a_nearest_record_s_source_fits_80_columns(invoke: Invoke, tmp_path: Path) -> None:
    pytest.importorskip("onnx")
    from tests.engine.job.tiny_network import INPUT, SHAPE, write_tiny_onnx

    onnx = write_tiny_onnx(tmp_path / "tiny.onnx")
    job = tmp_path / "net.yaml"
    shape = ", ".join(map(str, SHAPE))
    job.write_text(f"name: net\nlog: {tmp_path / 'none.log'}\n"
                   f"model: {{onnx: {onnx}, input: {{{INPUT}: [{shape}]}}}}\n")
    result = invoke("inspect", str(job))
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert all(len(line) <= 80 for line in lines), [line for line in lines if len(line) > 80]
    configs = json.loads(invoke("inspect", str(job), "--json").stdout)["networks"][0]["configs"]
    text = " ".join(line.strip() for line in lines[next(i for i, line in enumerate(lines)
                                                        if line.startswith("configs (")):])
    for label, source in configs.items():
        assert f"{label}: {source}" in text
    assert any(source.startswith("nearest: ") and len(source) > 80 for source in configs.values())



def test_a_task_s_heading_and_config_fit_80_columns(invoke: Invoke, tmp_path: Path) -> None:
    """``inspect JOB --config N``: the task's label, the config apply builds and the config shown
    are comments in lines of 80 columns, a config's knobs whole (the loop nest below is code)."""
    job = tmp_path / "job.yaml"
    job.write_text(f"name: job\nlog: {tmp_path / 'none.log'}\ntasks:\n"
                   "  - template: conv2d_nchw.x86\n    args: [1, 16, 16, 16, 16, 3, 3, 1, 1, 1, float32]\n"
                   "  - template: dense.x86\n    args: {M: 64, N: 64, K: 64}\n")
    comments = []
    for task, config in (("0", "0"), ("1", "1012")):
        result = invoke("inspect", str(job), "--task", task, "--config", config)
        assert result.exit_code == 0, result.output
        comments += [line for line in result.stdout.splitlines() if line.startswith("#")]
    assert all(len(line) <= 80 for line in comments), [line for line in comments if len(line) > 80]
    assert comments[0].startswith("# task 0: conv2d_nchw") and comments[1].endswith(" FLOP)")
    at = comments.index("# task 1: dense.x86(64, 64, 64, float32)  (524288 FLOP)")
    shown = " ".join(line.lstrip("# ") for line in comments[at + 1:])
    assert "#1012 tile_y=[-1,32,2] tile_x=[-1,2,32] tile_k=[-1,2] parallel=1 unroll_k=1" in shown
