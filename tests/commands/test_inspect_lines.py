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
