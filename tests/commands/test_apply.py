"""``tunecli apply``: the best logged config is built, checked against numpy and benchmarked."""

from __future__ import annotations

import json
from pathlib import Path

from .conftest import Invoke


def test_apply_best_config_checks_and_exports(invoke: Invoke, tiny_job, matmul_log: Path,
                                              tmp_path: Path) -> None:
    job, _ = tiny_job()
    export = tmp_path / "kernels"
    result = invoke("apply", job, "--log", str(matmul_log), "--export", str(export), "--json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    [task] = report["tasks"]
    assert report["ok"] and report["runs_here"]
    assert (task["config"], task["fallback"]) == ("#7 tile_y=[-1,4] tile_x=[-1,2]", False)
    assert (task["checked_against"], task["correct"]) == ("numpy", True)
    assert task["tuned"] > 0 and task["default"] > 0 and task["numpy"] > 0
    names = sorted(p.name for p in export.iterdir())
    assert names == ["task0_tutorial_matmul.ll", "task0_tutorial_matmul.o", "task0_tutorial_matmul.s"]
    assert (export / "task0_tutorial_matmul.o").read_bytes()[:4] == b"\x7fELF"
    assert "define" in (export / "task0_tutorial_matmul.ll").read_text()


def test_apply_without_record_uses_fallback_with_warning(invoke: Invoke, matmul_log: Path,
                                                          tmp_path: Path) -> None:
    job = tmp_path / "other.yaml"
    job.write_text("name: other\ntasks:\n  - template: tutorial/matmul\n    args: [8, 8, 8]\n"
                   "tuner: {kind: random, n_trial: 1}\n")
    result = invoke("apply", str(job), "--log", str(matmul_log))
    assert result.exit_code == 0, result.output
    assert "fallback" in result.stdout and "ok (numpy)" in result.stdout
    assert "warning: Cannot find config for target=llvm, workload=('tutorial/matmul', 8, 8, 8, 'float32')" \
        in result.stderr
