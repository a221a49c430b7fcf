"""``tunecli tune``: tuning appends to the log, and a second run resumes where the first stopped."""

from __future__ import annotations

import fcntl
import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.engine.measure.measure_helpers import spin_elsewhere
from tunecli.commands.tune import _ProgressView
from tunecli.engine.actions.tune import TuneEvent

from .conftest import TUNECLI, FakeTerminal, Invoke, progress_table_text


def log_indices(log: Path) -> list[int]:
    """Config indices of the log's records, in order."""
    return [json.loads(line)["config"]["index"] for line in log.read_text().splitlines() if line.strip()]


def test_tune_then_resume(invoke: Invoke, tiny_job) -> None:
    job, log = tiny_job(n_trial=4)
    first = invoke("tune", job, "--tuner", "gridsearch")
    assert first.exit_code == 0, first.output
    assert "tiny: gridsearch tuner, log " in first.stdout
    assert "    0 │    4/4 │   4 │      0 │" in first.stdout  # 80 columns: numbers, then the texts
    assert "task 0: tutorial/matmul(16, 16, 16, float32): #" in first.stdout
    progress = " ".join(first.stderr.split())  # a line over 80 columns goes on after the label
    assert "task 1/1 tutorial/matmul(16, 16, 16, float32): 4/4 trials, best " in progress
    assert all(len(line) <= 80 for line in first.stderr.splitlines())
    # grid order; a batch's records reach the log as its builds finish (n_parallel 2: in either order)
    assert sorted(log_indices(log)) == [0, 1, 2, 3]

    again = invoke("tune", job, "--json", "--n-trial", "7")
    assert again.exit_code == 0, again.output
    summary = json.loads(again.stdout)
    task = summary["tasks"][0]
    assert (summary["ok"], summary["tuner"], summary["seed"]) == (True, "random", 0)
    assert (task["template"], task["args"], task["space"]) == ("tutorial/matmul", [16, 16, 16, "float32"], 25)
    assert (task["previous"], task["measured"], task["errors"]) == (4, 3, 0)
    assert task["best_flops"] > 0 and task["best_index"] in log_indices(log)
    assert ("task 1/1 tutorial/matmul(16, 16, 16, float32): resuming, 4 of 7 trials are already in the log"
            in " ".join(again.stderr.split()))
    indices = log_indices(log)
    assert sorted(indices[:4]) == [0, 1, 2, 3] and len(indices) == len(set(indices)) == 7

    done = invoke("tune", job, "--json", "--n-trial", "7", "--quiet")
    assert json.loads(done.stdout)["tasks"][0]["measured"] == 0
    assert done.stderr == ""
    assert len(log_indices(log)) == 7


def test_remeasure_is_shown_and_counted_apart_from_trials(invoke: Invoke, tiny_job) -> None:
    job, log = tiny_job(n_trial=4)
    Path(job).write_text(Path(job).read_text().replace("seed: 0}", "seed: 0, remeasure: 2}"))
    first = invoke("tune", job)
    assert first.exit_code == 0, first.output
    assert "task 1/1 tutorial/matmul(16, 16, 16, float32): re-measuring the 2 best configs" in first.stderr
    assert "re-measured 2 configs (the 2 best of each task, not counted as trials)" in first.stdout
    indices = log_indices(log)
    assert len(indices) == 6 and len(set(indices)) == 4 and set(indices[4:]) <= set(indices[:4])

    again = invoke("tune", job, "--json")
    summary = json.loads(again.stdout)
    assert summary["remeasure"] == 2 and "re-measuring" not in again.stderr
    assert [(t["previous"], t["measured"], t["remeasured"]) for t in summary["tasks"]] == [(4, 0, 0)]
    assert len(log_indices(log)) == 6


def test_remeasure_option_overrides_the_job(invoke: Invoke, tiny_job) -> None:
    job, log = tiny_job(n_trial=3)
    bad = invoke("tune", job, "--remeasure", "-1")
    assert bad.exit_code == 2
    assert "Invalid value for '--remeasure': -1 is not in the range x>=0." in bad.stderr
    assert not log.exists()  # refused before anything runs
    assert "--remeasure K" in invoke("tune", "--help").stdout

    result = invoke("tune", job, "--remeasure", "2", "--json")
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert summary["remeasure"] == 2
    assert [(t["measured"], t["remeasured"]) for t in summary["tasks"]] == [(3, 2)]
    indices = log_indices(log)
    assert len(indices) == 5 and set(indices[3:]) <= set(indices[:3])


@pytest.mark.parametrize("sig", [signal.SIGTERM, pytest.param(signal.SIGKILL, marks=pytest.mark.slow)],
                         ids=["term", "kill"])
def test_killed_tune_keeps_every_finished_measurement_and_resumes(invoke: Invoke, tiny_job, sig: int) -> None:
    # Batches of 4 configs (builder n_parallel 4); each measurement lasts >= 0.1 s (50 ms warm-up,
    # one round of >= 50 ms). Each record reaches the log when its measurement finishes, so the log grows
    # one record at a time in the middle of a batch — and the kill lands while a batch is in flight.
    job, log = tiny_job(n_trial=12, min_repeat_ms=50, n_parallel=4)
    proc = subprocess.Popen([str(TUNECLI), "tune", job, "--quiet"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    seen: list[int] = []  # record counts observed while tune was running
    try:
        deadline = time.time() + 90
        while time.time() < deadline and proc.poll() is None:
            count = len(log_indices(log)) if log.exists() else 0
            if not seen or seen[-1] != count:
                seen.append(count)
            if count >= 5 and count % 4 != 0:
                break  # mid-batch: the batch of configs 5..8 is being measured
            time.sleep(0.02)
        assert proc.poll() is None, f"tune ended before it could be interrupted (log sizes seen: {seen})"
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert seen[-1] % 4 != 0, f"the log only grew by whole batches: {seen}"
    if sig == signal.SIGTERM:
        assert proc.returncode == 130
        assert err.endswith("interrupted: the finished measurements are in the log; run the same command "
                            "again to resume\n")
    first = log_indices(log)
    assert seen[-1] <= len(first) < 12  # nothing written before the kill is lost

    result = invoke("tune", job, "--json")
    assert result.exit_code == 0, result.output
    task = json.loads(result.stdout)["tasks"][0]
    assert task["previous"] == len(first) and task["measured"] == 12 - len(first)
    indices = log_indices(log)
    assert indices[:len(first)] == first
    assert len(indices) == len(set(indices)) == 12


def test_task_without_valid_config_exits_1(invoke: Invoke, tmp_path: Path) -> None:
    template = Path(__file__).parents[1] / "engine" / "job" / "data" / "scaled_add.py"
    log = tmp_path / "never.log"
    job = tmp_path / "never.yaml"
    job.write_text(f"name: never\nlog: {log}\ntasks:\n  - template: {template}:never_builds\n    args: [8]\n"
                   "tuner: {kind: gridsearch, n_trial: 2}\nmeasure:\n  builder: {n_parallel: 1}\n")
    result = invoke("tune", str(job), "--json")
    assert result.exit_code == 1, result.output
    task = json.loads(result.stdout)["tasks"][0]
    assert (task["measured"], task["errors"], task["ok"]) == (2, 2, False)
    assert result.stderr.endswith(
        "task 0 (test_job/never_builds): first error: INSTANTIATION_ERROR: never_builds: config 0 is refused "
        "on purpose\nerror: no valid config found for task 0 (test_job/never_builds); errors by kind: "
        f"`tunecli inspect {log}`\n")
    assert [json.loads(line)["result"][1] for line in log.read_text().splitlines()] == [1, 1]


def test_a_second_tune_on_the_same_log_is_refused(invoke: Invoke, tiny_job) -> None:
    """Two tunes appending to one log would measure the same configs twice: the second one stops."""
    job, log = tiny_job(n_trial=2)
    log.parent.mkdir(parents=True, exist_ok=True)
    log.write_text("")
    hard_link = log.with_name("other-name.log")
    os.link(log, hard_link)
    with open(log) as held:
        fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
        second = invoke("tune", job)
        third = invoke("tune", job, "--log", str(hard_link))
    assert second.exit_code == third.exit_code == 2
    assert second.stderr == (f"error: {log}: another tuning run (pid {os.getpid()}) is writing this log: "
                             "wait for it, or write to another log (--log PATH)\n")
    assert third.stderr.startswith(f"error: {hard_link}: another tuning run (pid {os.getpid()})")
    assert log.read_text() == ""
    assert invoke("tune", job).exit_code == 0  # the lock is free again
    assert len(log_indices(log)) == 2
    assert sorted(p.name for p in log.parent.iterdir()) == ["other-name.log", "tiny.log"]  # no lock file


@pytest.mark.parametrize("width", [60, 80, 100, 120, 200])
def test_progress_line_fits_the_terminal_and_keeps_the_numbers(width: int) -> None:
    label = "conv2d_nchw.x86(1, 56, 56, 64, 64, 3, 3, 1, 1, 1, 'float32')"
    view = _ProgressView(FakeTerminal(width))
    view(TuneEvent("start", 0, 12, label, 2000, 0, 0.0, 0.0, 0, 0.0))
    view(TuneEvent("batch", 0, 12, label, 2000, 1057, 1234.5e9, 1305.7e9, 17, 12.0))
    line = progress_table_text(view, width).rstrip("\n")
    assert len(line) <= width and "\n" not in line
    for part in ("task 1/12", "1057/2000", "1234.5/1305.7 GFLOPS", "17 err"):
        assert part in line, (width, line)
    assert ("conv2d_nchw.x86(1, 56, 56, 64, 64, 3, 3, 1, 1, 1, 'float32')" in line) == (width >= 200)


def test_progress_says_when_the_best_configs_are_measured_again() -> None:
    terminal = FakeTerminal(100)
    view = _ProgressView(terminal)
    view(TuneEvent("start", 0, 2, "dense.x86(8, 16, 4, 'float32')", 20, 0))
    view(TuneEvent("remeasure", 0, 2, "dense.x86(8, 16, 4, 'float32')", 20, 20, remeasuring=8))
    view.progress.refresh()
    assert "task 1/2 dense.x86(8, 16, 4, 'float32'): re-measuring the 8 best configs" in \
        terminal.err.file.getvalue()


def test_a_job_without_tuner_tunes_with_xgb(invoke: Invoke, tmp_path: Path) -> None:
    job = tmp_path / "smallest.yaml"
    job.write_text(f"name: smallest\nlog: {tmp_path / 'smallest.log'}\n"
                   "tasks:\n  - template: tutorial/matmul\n    args: [16, 16, 16]\n")
    result = invoke("tune", str(job), "--n-trial", "2", "--json")
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert (summary["tuner"], summary["tasks"][0]["measured"]) == ("xgb", 2)


def test_a_symlink_or_relative_path_to_a_locked_log_is_refused(invoke: Invoke, tiny_job, tmp_path: Path,
                                                               monkeypatch) -> None:
    from tunecli.engine.log.log_files import exclusive_log

    job, log = tiny_job(n_trial=2)
    log.parent.mkdir(parents=True, exist_ok=True)
    link = tmp_path / "link.log"
    link.symlink_to(log)
    monkeypatch.chdir(log.parent)
    with exclusive_log(log):
        for other in (str(link), "tiny.log", "../logs/tiny.log"):
            second = invoke("tune", job, "--log", other)
            assert second.exit_code == 2, second.output
            assert second.stderr.startswith(f"error: {other}: another tuning run (pid ")
    assert not log.exists()


def test_resume_skips_hostile_records_of_the_log(invoke: Invoke, tiny_job) -> None:
    """Records a run could not have written are skipped with their line (no ValueError traceback)."""
    job, log = tiny_job(n_trial=3)
    assert invoke("tune", job, "--tuner", "gridsearch").exit_code == 0
    lines = log.read_text().splitlines()
    bad = []
    for change in ({"index": "abc"}, {"index": -1}, {"error_no": 99}, {"costs": []}, {"costs": [-1.0]}):
        row = json.loads(lines[0])
        for key, value in change.items():
            if key == "index":
                row["config"]["index"] = value
            else:
                row["result"][["costs", "error_no"].index(key)] = value
        bad.append(json.dumps(row))
    log.write_text("\n".join([*lines, *bad, "{truncated", "\x00\x01 binary"]) + "\n")
    result = invoke("tune", job, "--json", "--n-trial", "5")
    assert result.exit_code == 0, result.output
    task = json.loads(result.stdout)["tasks"][0]
    assert (task["previous"], task["measured"]) == (3, 2)
    assert "Traceback" not in result.stderr and "RuntimeWarning" not in result.stderr
    assert f"warning: {log}:4: skipping malformed record: config index 'abc'" in result.stderr
    new = [json.loads(line)["config"]["index"] for line in log.read_text().splitlines()[len(lines) + 7:]]
    assert len(new) == len(set(new)) == 2 and not set(new) & {0, 1, 2}


def test_quiet_prints_nothing_and_json_prints_only_json(invoke: Invoke, tiny_job) -> None:
    job, log = tiny_job(n_trial=2)
    quiet = invoke("tune", job, "--quiet")
    assert quiet.exit_code == 0, quiet.output
    assert (quiet.stdout, quiet.stderr) == ("", "")
    as_json = invoke("tune", job, "--json", "--quiet", "--n-trial", "3")
    assert json.loads(as_json.stdout)["tasks"][0]["measured"] == 1 and as_json.stderr == ""
    noisy = invoke("tune", job, "--json", "--n-trial", "4")
    assert json.loads(noisy.stdout)["ok"]  # stdout is the JSON document alone; progress is on stderr
    assert "resuming, 3 of 4 trials" in noisy.stderr


def test_results_fit_80_columns_off_a_terminal(invoke: Invoke, tiny_job, matmul_log: Path,
                                               tmp_path: Path) -> None:
    job, log = tiny_job(n_trial=2)
    results = [invoke("tune", job), invoke("best", str(log), str(matmul_log), "--top", "2"),
               invoke("apply", job, "--log", str(matmul_log)), invoke("inspect", str(matmul_log))]
    for result in results:
        assert result.exit_code == 0, result.output
        lines = [line for line in result.stdout.splitlines() if str(tmp_path) not in line]  # paths whole
        assert max(map(len, lines)) <= 80, result.stdout


def test_a_record_faster_than_any_machine_is_not_the_best_of_a_resumed_tune(invoke: Invoke, tiny_job) -> None:
    job, log = tiny_job(n_trial=3)
    assert invoke("tune", job, "--tuner", "gridsearch").exit_code == 0
    lines = log.read_text().splitlines()
    from tunecli.engine.log.record import encode
    from tunecli.engine.measure.result import MeasureInput, MeasureResult
    from tunecli.engine.task.task import create

    task = create("tutorial/matmul", (16, 16, 16, "float32"), "llvm")
    fake = encode(MeasureInput(task.target, task, task.config_space.get(24)),
                  MeasureResult((1e-15,), 0, 0.1, time.time()))  # 8 PFLOPS for a 16^3 matmul
    log.write_text("\n".join([*lines, fake]) + "\n")
    result = invoke("tune", job, "--json", "--n-trial", "4")
    assert result.exit_code == 0, result.output
    task = json.loads(result.stdout)["tasks"][0]
    assert task["previous"] == 4 and task["measured"] == 0  # its config counts as measured...
    assert task["best_index"] != 24 and task["best_flops"] < 1e12  # ...but it is nobody's best
    assert f"warning: {log}:4: skipping a record of " in result.stderr


def test_a_tune_beside_other_work_says_the_machine_was_busy(invoke: Invoke, tiny_job) -> None:
    """Two processes that are not tune's keep both cores busy while it measures: tune says so, on
    stderr within 80 columns and in --json's notes, with what to do about it."""
    job, _ = tiny_job(n_trial=4)
    spin_elsewhere(8.0, 2)
    result = invoke("tune", job, "--json")
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert summary["load"]["measured"] > 0.5 and summary["load"]["own_cpu"] > 0
    [note] = summary["notes"]
    assert note.startswith("the machine was busy while tuning: other work kept about ")
    assert "remeasure" in note
    warning = result.stderr[result.stderr.index("warning: "):]  # the last lines, wrapped
    assert " ".join(warning.split()) == f"warning: {note}"
    assert all(len(line) <= 80 for line in result.stderr.splitlines())
