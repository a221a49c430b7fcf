"""``tunecli apply``: the best logged config is built, checked and benchmarked in a worker process."""

from __future__ import annotations

import hashlib
import json
import os
import re
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tunecli.commands.app import App
from tunecli.commands.apply import _print_report
from tunecli.engine.actions.apply_kernels import AppliedTask, ApplyReport
from tunecli.engine.job.spec import load_job
from tunecli.engine.job.tasks import create_task
from tunecli.engine.log.record import encode
from tunecli.engine.measure.result import MeasureErrorNo, MeasureInput, MeasureResult
from tunecli.engine.measure.time_stats import TimeStats, time_stats

from .conftest import TUNECLI, Invoke


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
    assert re.fullmatch(r"float32 a @ b, \d+ threads", task["numpy_baseline"])
    stem = "tiny_task0_tutorial_matmul_" + hashlib.sha1(repr(("tutorial/matmul", 16, 16, 16, "float32"))
                                                         .encode()).hexdigest()[:8]
    names = sorted(p.name for p in export.iterdir())
    assert names == [f"{stem}.ll", f"{stem}.o", f"{stem}.o.tunecli_blob", f"{stem}.s"]
    assert (export / f"{stem}.o").read_bytes()[:4] == b"\x7fELF"
    assert f"define void @{stem}(" in (export / f"{stem}.ll").read_text()  # the symbol names the job too


def test_apply_without_record_uses_fallback_with_warning(invoke: Invoke, matmul_log: Path, tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """No record of the template in the log and no package: the fallback config (a record of the
    same template would answer with the nearest record's config instead)."""
    monkeypatch.setenv("TUNECLI_TOPHUB", "NONE")
    job = tmp_path / "other.yaml"  # a workload no other test uses: the warning is given once a process
    job.write_text("name: other\ntasks:\n  - template: dense.x86\n    args: [4, 24, 12]\n"
                   "tuner: {kind: random, n_trial: 1}\n")
    result = invoke("apply", str(job), "--log", str(matmul_log))
    assert result.exit_code == 0, result.output
    assert "fallback" in result.stdout and "ok (numpy)" in result.stdout
    assert "warning: Cannot find config for target=llvm, workload=('dense.x86', 4, 24, 12, 'float32')" \
        in result.stderr


FAULTY_JOB = """\
name: faulty
target: llvm
tasks:
  - template: {template}:maybe_crash
    args: {{n: 64}}
  - template: {template}:maybe_hang
    args: {{n: 64}}
  - template: {template}:maybe_crash
    args: {{n: 32}}
tuner: {{kind: random, n_trial: 1}}
measure:
  runner: {{number: 1, repeat: 1, timeout: 3}}
"""


def test_crashing_and_hanging_kernels_are_their_tasks_errors_and_the_others_are_applied(
        invoke: Invoke, tmp_path: Path) -> None:
    """The log's best configs: task 0 reads 1 GiB outside its input, task 1 runs for minutes, task 2
    is correct. apply reports both failures, still checks and times task 2, and exits with 1."""
    job = tmp_path / "faulty.yaml"
    job.write_text(FAULTY_JOB.format(template=Path(__file__).parent / "data" / "faulty_kernels.py"))
    spec = load_job(str(job))
    log = tmp_path / "faulty.log"
    with open(log, "w") as file:
        for index, config_index in ((0, 1), (1, 1), (2, 0)):  # the configs the log calls best
            task = create_task(spec, index)
            inp = MeasureInput(task.target, task, task.config_space.get(config_index))
            file.write(encode(inp, MeasureResult((1e-6,), MeasureErrorNo.NO_ERROR, 0.1, time.time())) + "\n")
    result = invoke("apply", str(job), "--log", str(log), "--json")
    assert result.exit_code == 1, result.output
    crashed, hung, applied = json.loads(result.stdout)["tasks"]
    assert crashed["config"] == "#1 offset=-268435456" and crashed["tuned"] is None
    assert crashed["error"].startswith("RUNTIME_DEVICE: ") and "SIGSEGV" in crashed["error"]
    assert hung["error"] == "RUN_TIMEOUT: call did not finish within 3 s" and hung["tuned"] is None
    assert applied["error"] is None and applied["correct"] is True
    assert applied["checked_against"] == "default config"
    assert applied["tuned"] > 0 and applied["default"] > 0
    assert "error: task 0 (test_apply/maybe_crash(64)): RUNTIME_DEVICE: worker process" in result.stderr
    assert "error: task 1 (test_apply/maybe_hang(64)): RUN_TIMEOUT" in result.stderr
    assert "error: task 0, 1 failed to build or run (the other tasks were applied)" in result.stderr


def test_the_table_marks_a_failed_task(invoke: Invoke, tmp_path: Path) -> None:
    """Without --json the failed task's row says ERROR and the correct one is checked."""
    job = tmp_path / "crashy.yaml"
    job.write_text(FAULTY_JOB.replace("  - template: {template}:maybe_hang\n    args: {{n: 64}}\n", "")
                   .format(template=Path(__file__).parent / "data" / "faulty_kernels.py"))
    spec = load_job(str(job))
    log = tmp_path / "crashy.log"
    with open(log, "w") as file:
        for index, config_index in ((0, 1), (1, 0)):
            task = create_task(spec, index)
            inp = MeasureInput(task.target, task, task.config_space.get(config_index))
            file.write(encode(inp, MeasureResult((1e-6,), MeasureErrorNo.NO_ERROR, 0.1, time.time())) + "\n")
    result = invoke("apply", str(job), "--log", str(log))
    assert result.exit_code == 1
    assert "ERROR" in result.stdout and "ok (default config)" in result.stdout


def test_apply_checks_every_task_first_and_names_every_problem(invoke: Invoke, matmul_log: Path,
                                                             tmp_path: Path) -> None:
    conv = ("  - template: conv2d_nchw.x86\n"
            "    args: {N: 1, H: 8, W: 8, CI: 4, CO: 4, KH: 3, KW: 3, stride: 1, padding: 1, dilation: 1}\n")
    job = tmp_path / "job.yaml"
    job.write_text("name: g\ntasks:\n  - template: dense.x86\n    args: {M: 16, N: 16, K: 16}\n"
                   + conv.replace("stride: 1", "stride: 0") + conv.replace("KH: 3", "KH: 30"))
    export = tmp_path / "kernels"
    result = invoke("apply", str(job), "--log", str(matmul_log), "--export", str(export))
    assert result.exit_code == 2, result.output
    assert result.stderr == (
        f"error: {job}:6: tasks[1].args: template conv2d_nchw.x86 rejects (1, 8, 8, 4, 4, 3, 3, 0, 1, 1, "
        "'float32'): stride must be at least 1, got 0\n"
        f"error: {job}:8: tasks[2].args: template conv2d_nchw.x86 rejects (1, 8, 8, 4, 4, 30, 3, 1, 1, 1, "
        "'float32'): window (30, 3) (dilation 1) does not fit input (8, 8) with padding 1\n")
    assert not export.exists()  # nothing built before the job is known good


def test_apply_gives_the_rounds_and_the_logs_time_and_warns_when_far_above_it(invoke: Invoke,
                                                                             tmp_path: Path) -> None:
    """A record claiming 1 us for a 2-MFLOP kernel (no machine runs it that fast): apply's time of
    the same config is far above the log's, which it says in one warning line and in the JSON."""
    job = tmp_path / "dense.yaml"
    job.write_text("name: dense\ntasks:\n  - template: dense.x86\n    args: [64, 128, 128]\n"
                   "measure:\n  runner: {number: 1, repeat: 3}\n")
    task = create_task(load_job(str(job)), 0)
    log = tmp_path / "dense.log"
    inp = MeasureInput(task.target, task, task.config_space.get(0))
    log.write_text(encode(inp, MeasureResult((1e-6,), MeasureErrorNo.NO_ERROR, 0.1, time.time())) + "\n")
    result = invoke("apply", str(job), "--log", str(log), "--json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    [applied] = report["tasks"]
    assert applied["log_time"] == 1e-6 and applied["vs_log"] > 1.5
    assert applied["tuned_stats"]["rounds"] == 3 and applied["tuned_stats"]["median"] == applied["tuned"]
    assert applied["tuned_stats"]["low"] <= applied["tuned"] <= applied["tuned_stats"]["high"]
    far = [note for note in report["notes"] if note.startswith("task 0: timed ")]
    assert len(far) == 1 and "x the log's 0.001 ms for the same config" in far[0]
    assert f"warning: {far[0]}\n" in result.stderr
    assert report["load"]["cores"] >= 1 and len(report["load"]["samples"]) == 2

    table = invoke("apply", str(job), "--log", str(log))
    assert table.exit_code == 0, table.output
    assert "vs log" in table.stdout and "spread" in table.stdout
    assert all(len(line) <= 80 for line in table.stdout.splitlines())  # the narrow form fits 80 columns


def test_an_export_apply_cannot_write_is_refused_before_anything_is_built(invoke: Invoke, matmul_log: Path,
                                                                          tmp_path: Path) -> None:
    job = tmp_path / "tiny.yaml"
    job.write_text("name: tiny\ntasks:\n  - template: tutorial/matmul\n    args: [16, 16, 16]\n")
    result = invoke("apply", str(job), "--log", str(matmul_log), "--export", "/proc/x")
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith("error: /proc/x: cannot write the export in /proc: ")
    assert result.stdout == ""  # no table: nothing was built or timed

    pytest.importorskip("onnx")
    from tests.engine.job.tiny_network import INPUT, SHAPE, write_tiny_onnx

    onnx = write_tiny_onnx(tmp_path / "tiny.onnx")
    net = tmp_path / "net.yaml"
    shape = ", ".join(map(str, SHAPE))
    net.write_text(f"name: net\nmodel: {{onnx: {onnx}, input: {{{INPUT}: [{shape}]}}}}\n")
    refused = invoke("apply", str(net), "--log", str(matmul_log), "--export", "/proc/x/net.so")
    assert refused.exit_code == 2, refused.output
    assert refused.stderr.startswith("error: /proc/x/net.so: cannot write the export in /proc: ")


def test_a_kernel_export_directory_appears_whole(invoke: Invoke, matmul_log: Path, tmp_path: Path) -> None:
    job = tmp_path / "tiny.yaml"
    job.write_text("name: tiny\ntasks:\n  - template: tutorial/matmul\n    args: [16, 16, 16]\n"
                   "measure:\n  runner: {number: 1, repeat: 1}\n")
    export = tmp_path / "out" / "kernels"
    result = invoke("apply", str(job), "--log", str(matmul_log), "--export", str(export), "--json")
    assert result.exit_code == 0, result.output
    [task] = json.loads(result.stdout)["tasks"]
    assert sorted(Path(f).name for f in task["files"]) == sorted(p.name for p in export.iterdir())
    assert [p.name for p in (tmp_path / "out").iterdir()] == ["kernels"]  # no temporary left beside it


def test_the_narrow_table_keeps_every_number_whole_when_numpy_is_slow(
        capsys: pytest.CaptureFixture, monkeypatch: pytest.MonkeyPatch) -> None:
    """On a busy machine numpy's BLAS threads can take 38 ms for a 128^3 matmul that the kernel runs
    in 0.02 ms: at 80 columns the numbers are shown with fewer decimals, never cut off."""
    monkeypatch.delenv("COLUMNS", raising=False)
    rounds = TimeStats(median=1.972e-5, q1=1.9e-5, q3=4e-5, low=1.8e-5, high=9e-5, rounds=3)
    task = AppliedTask(index=0, label="dense.x86(128, 128, 128, float32)", flop=2 * 128**3,
                       config="#5355 tile_y=[-1,1,4] tile_x=[-1,1,64]", fallback=False,
                       checked_against="numpy", correct=True, max_error=0.0, tuned=1.972e-5, default=1.659e-5,
                       numpy=0.03828, numpy_baseline="float32 a @ w.T, 2 threads", tuned_stats=rounds,
                       log_time=1.062e-5)
    _print_report(App(), ApplyReport(job="rpcjob", log="logs/rpcjob.log", target="llvm", runs_here=True,
                                     tasks=[task]))
    out = capsys.readouterr().out
    assert all(len(line) <= 80 for line in out.splitlines()) and "\u2026" not in out
    [row] = [line for line in out.splitlines() if line.lstrip().startswith("0 ")]
    cells = [cell.strip() for cell in row.split("\u2502")[2:]]
    assert cells == ["0.02", "106%", "1.86x", "0.0166", "0.84x", "38.28", "1941x"]  # rounds 0.019..0.040 ms


def test_a_time_shows_only_the_digits_its_rounds_support(capsys: pytest.CaptureFixture,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """Rounds of 0.2002, 0.2005 and 0.3457 ms (a busy machine) support '0.20', not '0.2005'; rounds
    that agree to 0.3% keep four digits; GFLOPS follow the tuned time's digits."""
    monkeypatch.setenv("COLUMNS", "250")
    task = AppliedTask(index=0, label="dense.x86(256, 256, 256, float32)", flop=2 * 256**3, config="#69",
                       fallback=False, checked_against="numpy", correct=True, max_error=0.0,
                       tuned=2.005e-4, default=1.794e-4,
                       tuned_stats=time_stats([2.002e-4, 2.005e-4, 3.457e-4]),
                       default_stats=time_stats([1.790e-4, 1.794e-4, 1.801e-4]), log_time=1.7934e-4)
    _print_report(App(), ApplyReport(job="q", log="q.log", target="llvm", runs_here=True, tasks=[task]))
    [row] = [line for line in capsys.readouterr().out.splitlines() if "ok (numpy)" in line]
    cells = [cell.strip() for cell in row.split("\u2502")]
    assert cells[4:11] == ["0.20", "36%", "0.1793", "1.12x", "170", "0.1794", "0.89x"]


def test_a_job_not_tuned_yet_is_a_usage_error_that_says_how_to_tune_it(
        invoke: Invoke, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    Path("fresh.yaml").write_text("name: fresh\ntasks:\n  - template: dense.x86\n    args: [8, 8, 8]\n")
    result = invoke("apply", "fresh.yaml")
    assert result.exit_code == 2, result.output
    assert result.stderr == ("error: logs/fresh.log: no such log file (`tunecli tune fresh.yaml` writes the "
                             "job's log; --log PATH names another)\n")
    assert result.stdout == "" and not Path("logs").exists()


def test_a_killed_apply_leaves_no_export_and_no_temporary_files(matmul_log: Path, tmp_path: Path) -> None:
    """kill (SIGTERM) while the first kernel is timed, its files already written to the staging
    directory: exit code 130, no export, nothing left in the temporary directory."""
    job = tmp_path / "tiny.yaml"
    job.write_text("name: tiny\ntasks:\n  - template: tutorial/matmul\n    args: [16, 16, 16]\n"
                   "measure:\n  runner: {number: 1, repeat: 3, min_repeat_ms: 300}\n")
    scratch, export = tmp_path / "scratch", tmp_path / "kernels"
    scratch.mkdir()
    command = [str(TUNECLI), "apply", str(job), "--log", str(matmul_log), "--export", str(export)]
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "TMPDIR": str(scratch)})
    try:
        deadline = time.time() + 60
        while time.time() < deadline and proc.poll() is None and not any(scratch.glob("tunecli_export_*/*")):
            time.sleep(0.02)
        assert proc.poll() is None, "apply ended before it could be killed"
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err
    assert err.endswith("interrupted\n")
    assert not export.exists() and list(scratch.iterdir()) == []


def test_a_kernel_job_s_apply_shows_each_task_as_it_starts(invoke: Invoke, matmul_log: Path,
                                                            tmp_path: Path) -> None:
    """Each task is built, checked and timed in turn (seconds each): a line per task on stderr, in
    80 columns, and the seconds of the whole at the end."""
    job = tmp_path / "two.yaml"
    job.write_text("name: two\ntasks:\n  - template: tutorial/matmul\n    args: [16, 16, 16]\n"
                   "  - template: dense.x86\n    args: {M: 16, N: 16, K: 16}\n"
                   "measure:\n  runner: {number: 1, repeat: 1}\n")
    result = invoke("apply", str(job), "--log", str(matmul_log))
    assert result.exit_code == 0, result.output
    lines = [line for line in result.stderr.splitlines() if line.startswith("apply: ")]
    assert lines[:2] == ["apply: task 1/2 (tutorial/matmul): building, checking, timing",
                         "apply: task 2/2 (dense.x86): building, checking, timing"]
    assert lines[-1].startswith("apply: done in ") and len(lines) == 3


def _uncertain_task(uncertain: bool) -> AppliedTask:
    """A task timed on a busy machine: median 0.69 ms, fastest round 0.54 ms (untuned: nearest #1920)."""
    return AppliedTask(index=0, label="conv2d_NCHWc.x86(...)", flop=2e8, config="#3", fallback=False,
                       checked_against="numpy", correct=True, max_error=0.0, tuned=6.93e-4, default=9.1e-4,
                       tuned_stats=time_stats([5.44e-4, 6.5e-4, 6.93e-4, 8.8e-4, 9.0e-4]),
                       default_stats=time_stats([8.0e-4, 8.6e-4, 9.1e-4, 9.4e-4, 1.2e-3]), log_time=5.497e-4,
                       default_source="nearest", default_config="#1920 tile_y=[-1,1,16]", uncertain=uncertain)


@pytest.mark.parametrize("columns", ["250", "80"])
def test_an_uncertain_median_shows_the_fastest_round_beside_it(
        capsys: pytest.CaptureFixture, monkeypatch: pytest.MonkeyPatch, columns: str) -> None:
    """The machine was busy: each median is shown with its fastest round (what the kernel does
    undisturbed); the untuned column names the config an untuned build runs and where it is from."""
    monkeypatch.setenv("COLUMNS", columns)
    _print_report(App(), ApplyReport(job="q", log="q.log", target="llvm", runs_here=True,
                                     tasks=[_uncertain_task(True)]))
    out = capsys.readouterr().out
    assert all(len(line) <= int(columns) for line in out.splitlines())
    [row] = [line for line in out.splitlines() if "0.7" in line and "\u2502" in line]
    shown = " ".join(out.split()) if columns == "80" else row  # at 80 columns, in the task's line under it
    assert "0.7 (fastest 0.54)" in shown and "0.91 (fastest 0.80)" in shown  # the median's digits, 2 or more
    assert "\u2026" not in out
    assert "the fastest round, shown where the machine was busy" in " ".join(out.split())
    assert "task 0: nearest #1920 tile_y=[-1,1,16]" in " ".join(out.split())


def test_a_certain_median_is_shown_alone(capsys: pytest.CaptureFixture,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "250")
    _print_report(App(), ApplyReport(job="q", log="q.log", target="llvm", runs_here=True,
                                     tasks=[_uncertain_task(False)]))
    out = capsys.readouterr().out
    assert "fastest" not in out and "(0." not in out


def test_the_untuned_column_names_the_config_an_untuned_build_runs(
        capsys: pytest.CaptureFixture, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "250")
    task = AppliedTask(index=0, label="dense.x86(256, 256, 256, float32)", flop=2 * 256**3, config="#69",
                       fallback=False, checked_against="numpy", correct=True, tuned=1.87e-4, default=2.45e-4,
                       default_source="nearest", default_config="#1920 tile_y=[-1,1,16]")
    _print_report(App(), ApplyReport(job="q", log="q.log", target="llvm", runs_here=True, tasks=[task]))
    out = " ".join(capsys.readouterr().out.split())
    assert "untuned ms" in out and "default ms" not in out
    assert "untuned: the config a build without a log runs" in out
    assert "task 0: nearest #1920 tile_y=[-1,1,16]" in out
