"""``tunecli best``: best configs per workload, from tunecli's logs and TVM's."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from .conftest import Invoke

REPO_TOPHUB = Path(__file__).parent / "data" / "llvm_v0.04_head.log"


def test_best_of_own_log(invoke: Invoke, matmul_log: Path, tmp_path: Path) -> None:
    out = tmp_path / "best.log"
    result = invoke("best", str(matmul_log), "--json", "-o", str(out))
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert (report["records"], report["errors"], report["written"]) == (3, 1, str(out))
    [workload] = report["workloads"]
    assert workload["workload"] == ["tutorial/matmul", 16, 16, 16, "float32"]
    assert workload["flop"] == 2 * 16**3
    [best] = workload["best"]
    assert (best["index"], best["cost"]) == (7, 5e-4)
    assert best["gflops"] == 2 * 16**3 / 5e-4 / 1e9
    assert best["config"] == "#7 tile_y=[-1,4] tile_x=[-1,2]"
    lines = out.read_text().splitlines()
    assert len(lines) == 1 and json.loads(lines[0])["config"]["index"] == 7
    assert lines[0] == matmul_log.read_text().splitlines()[1]  # written back byte for byte


def test_top_k_table(invoke: Invoke, matmul_log: Path) -> None:
    result = invoke("best", str(matmul_log), "--top", "2")
    assert result.exit_code == 0
    assert "3 records (1 errors) in" in result.stdout
    rows = [line for line in result.stdout.splitlines() if "#7 " in line or "#3 " in line]
    assert len(rows) == 2 and "#7 " in rows[0] and "0.5000" in rows[0] and "1.0000" in rows[1]


def test_reads_tvm_tophub_log(invoke: Invoke) -> None:
    result = invoke("best", str(REPO_TOPHUB), "--json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["records"] == 4
    first = report["workloads"][0]
    assert first["target"] == "llvm -mcpu=skylake-avx512"
    assert first["workload"][:2] == ["conv2d_NCHWc.x86", ["TENSOR", [1, 3, 224, 224], "float32"]]
    # TVM's conv2d_NCHWc workload: 2 * 64 out channels * 112 * 112 * 3 in channels * 7 * 7
    assert first["flop"] == 2 * 64 * 112 * 112 * 3 * 7 * 7
    assert first["best"][0]["gflops"] == pytest.approx(first["flop"] / first["best"][0]["cost"] / 1e9)
    assert first["best"][0]["config"] == "#193 tile_ic=[1,3] tile_oc=[2,32] tile_ow=[14,8] unroll_kw=False"


def test_malformed_lines_are_skipped_with_their_line_number(invoke: Invoke, matmul_log: Path,
                                                              tmp_path: Path) -> None:
    broken = tmp_path / "broken.log"
    lines = matmul_log.read_text().splitlines()
    broken.write_text("\n".join([lines[0], "{not json", "", lines[1]]) + "\n")
    result = invoke("best", str(broken), "--json")
    assert result.exit_code == 0
    assert json.loads(result.stdout)["records"] == 2
    assert f"warning: {broken}:2: skipping" in result.stderr


def test_missing_log_is_a_usage_error(invoke: Invoke, tmp_path: Path) -> None:
    result = invoke("best", str(tmp_path / "none.log"))
    assert result.exit_code == 2
    assert "does not exist" in result.stderr
