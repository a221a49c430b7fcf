"""``tunecli best``: best configs per workload, from tunecli's logs and TVM's."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tunecli.engine.log.plausibility import peak_flops

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


def test_top_k_table(invoke: Invoke, matmul_log: Path, monkeypatch) -> None:
    monkeypatch.setenv("COLUMNS", "200")
    wide = invoke("best", str(matmul_log), "--top", "2")
    assert wide.exit_code == 0
    assert "3 records (1 errors) in" in wide.stdout
    rows = [line for line in wide.stdout.splitlines() if "#7 " in line or "#3 " in line]
    assert len(rows) == 2 and "#7 " in rows[0] and "0.5000" in rows[0] and "1.000" in rows[1]
    monkeypatch.delenv("COLUMNS")
    narrow = invoke("best", str(matmul_log), "--top", "2")  # not a terminal: 80 columns
    lines = narrow.stdout.splitlines()
    assert max(map(len, lines)) <= 80
    assert [line.split() for line in lines if line.strip().startswith(("0 │", "│"))][:2] == [
        ["0", "│", "1", "│", "0.02", "│", "0.5000"], ["│", "2", "│", "0.01", "│", "1.000"]]
    assert lines[-3:] == ["[0] tutorial/matmul(16, 16, 16, float32) on llvm",
                          "[0] #1: #7 tile_y=[-1,4] tile_x=[-1,2]", "[0] #2: #3 tile_y=[-1,8] tile_x=[-1,1]"]


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


@pytest.mark.parametrize("command", [["best"], ["apply", "--log"]])
def test_a_job_file_given_as_a_log_is_a_usage_error_that_says_so(invoke: Invoke, tmp_path: Path,
                                                                 command: list[str]) -> None:
    job = tmp_path / "quick.yaml"
    job.write_text("# a job\nname: quick\ntasks:\n  - template: dense.x86\n    args: [16, 16, 16]\n")
    args = [*command, str(job)] if command == ["best"] else ["apply", str(job), "--log", str(job)]
    result = invoke(*args)
    assert result.exit_code == 2, result.output
    said = " ".join(result.stderr.split())
    assert f"{job}: is a job file, not a tuning log: `tunecli tune {job}` tunes it" in said
    assert "skipping" not in result.stderr and result.stdout == ""


def test_a_log_named_yaml_is_still_read(invoke: Invoke, matmul_log: Path, tmp_path: Path) -> None:
    log = tmp_path / "records.yaml"
    log.write_bytes(matmul_log.read_bytes())
    result = invoke("best", str(log), "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["records"] == 3


def test_output_that_is_an_input_is_refused_and_the_log_kept(invoke: Invoke, matmul_log: Path,
                                                             tmp_path: Path, monkeypatch) -> None:
    before = matmul_log.read_bytes()
    link = tmp_path / "link.log"
    link.symlink_to(matmul_log)
    monkeypatch.chdir(tmp_path)
    for out in (str(matmul_log), str(link), matmul_log.name):
        result = invoke("best", str(matmul_log), "--top", "1", "-o", out)
        assert result.exit_code == 2, result.output
        assert result.stderr == (f"error: {out}: is the input log {matmul_log}: writing it would replace the "
                                 "records being read; write to another log (-o PATH)\n")
    assert matmul_log.read_bytes() == before


def test_output_a_tune_is_writing_is_refused(invoke: Invoke, matmul_log: Path, tmp_path: Path) -> None:
    import fcntl
    import os

    busy = tmp_path / "busy.log"
    busy.write_text("# a tune appends here\n")
    with open(busy) as held:
        fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
        result = invoke("best", str(matmul_log), "-o", str(busy))
    assert result.exit_code == 2
    assert f"a tuning run (pid {os.getpid()}) is writing this log" in result.stderr
    assert busy.read_text() == "# a tune appends here\n"


def test_an_unwritable_output_is_a_usage_error_naming_it(invoke: Invoke, matmul_log: Path) -> None:
    """A destination under a file, or in a place no file can be made (``/proc``), is refused with
    exit code 2 and one line naming the destination, not a temporary name."""
    for out, why in ((f"{matmul_log}/best.log", f"{matmul_log} is not a directory"),
                     ("/proc/best.log", "")):
        result = invoke("best", str(matmul_log), "-o", out)
        assert result.exit_code == 2, result.output
        assert result.stderr.startswith(f"error: {out}: cannot write ") and why in result.stderr
        assert result.stderr.count("\n") == 1 and ".tmp" not in result.stderr


def test_hostile_records_are_skipped_and_the_best_is_real(invoke: Invoke, matmul_log: Path,
                                                          tmp_path: Path) -> None:
    """A negative cost, a nanosecond for a 16^3 matmul... none of them may become the best."""
    good = matmul_log.read_text().splitlines()
    row = json.loads(good[1])

    def variant(**changes) -> str:
        copy = json.loads(json.dumps(row))
        for key, value in changes.items():
            if key == "index":
                copy["config"]["index"] = value
            else:
                copy["result"][["costs", "error_no"].index(key)] = value
        return json.dumps(copy)

    hostile = tmp_path / "hostile.log"
    hostile.write_text("\n".join([*good, variant(costs=[-1.0]), variant(costs=[1e-15]), variant(error_no=99),
                                  variant(error_no="x"), variant(index="abc"), variant(costs=[])]) + "\n")
    result = invoke("best", str(hostile), "--json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["records"] == 3
    best = report["workloads"][0]["best"][0]
    assert (best["index"], best["cost"]) == (7, 5e-4)
    peak = peak_flops("llvm", row["input"][2]) / 1e9
    assert result.stderr.splitlines() == [
        f"warning: {hostile}:4: skipping malformed record: cost -1.0 is not a non-negative number of seconds",
        f"warning: {hostile}:5: skipping a record of 8.192e+09 GFLOPS (8192 FLOP in 1e-15 s), more than any "
        f"machine of target llvm reaches ({peak:.6g} GFLOPS)",
        f"warning: {hostile}:6: skipping malformed record: error number 99 is not one of 0..8",
        f"warning: {hostile}:8: skipping malformed record: config index 'abc' is not a non-negative integer",
        f"warning: {hostile}: skipped 1 more line of the same kind (bad cost): line 9",
        f"warning: {hostile}: skipped 1 more line of the same kind (bad error number): line 7",
    ]
    assert "RuntimeWarning" not in result.stderr


def _untuned_log(tmp_path: Path, tuned_ms: float, marked: int = 0) -> Path:
    """A log of tutorial/matmul(16, 16, 16): config ``marked`` marked untuned (1 ms; config 0 is the
    untuned build's, the template's fallback), config 7 ``tuned_ms``."""
    from tunecli.engine.log.record import encode
    from tunecli.engine.measure.result import MeasureInput, MeasureResult
    from tunecli.engine.task.task import create

    task = create("tutorial/matmul", (16, 16, 16, "float32"), "llvm")
    untuned = task.config_space.get(marked)
    untuned.untuned = "default"
    path = tmp_path / "untuned.log"
    path.write_text(
        encode(MeasureInput(task.target, task, untuned), MeasureResult((1e-3,), 0, 0.1, 0.0)) + "\n"
        + encode(MeasureInput(task.target, task, task.config_space.get(7)),
                 MeasureResult((tuned_ms * 1e-3,), 0, 0.1, 0.0)) + "\n")
    return path


def test_best_says_when_apply_keeps_the_untuned_config(invoke: Invoke, tmp_path: Path, monkeypatch) -> None:
    log = _untuned_log(tmp_path, 0.98)
    monkeypatch.setenv("COLUMNS", "200")
    result = invoke("best", str(log), "--top", "2")
    assert result.exit_code == 0, result.output
    assert "#0 tile_y=[-1,1] tile_x=[-1,1] (untuned)" in result.stdout
    assert ("[0] apply builds config 0:\n"
            "  the untuned config (default): config 7 is only 2.0% faster (margin 5%)\n") in result.stdout
    report = json.loads(invoke("best", str(log), "--json").stdout)
    [workload] = report["workloads"]
    assert (workload["best"][0]["index"], workload["chosen"]) == (7, 0)

    clear = invoke("best", str(_untuned_log(tmp_path, 0.5)))
    assert ("[0] apply builds config 7:\n"
            "  the fastest record: 50.0% faster than the untuned config (default), over 5%\n"
            ) in clear.stdout


def test_best_says_when_a_mark_is_no_longer_the_untuned_config(invoke: Invoke, tmp_path: Path,
                                                                monkeypatch) -> None:
    """Config 3 marked untuned, as a tune marked it when the fallback rules chose it: it is not what
    the untuned build runs today (config 0), so a record 2% faster answers and the line says why."""
    log = _untuned_log(tmp_path, 0.98, marked=3)
    monkeypatch.setenv("COLUMNS", "200")
    result = invoke("best", str(log), "--top", "2")
    assert result.exit_code == 0, result.output
    assert "(untuned)" not in result.stdout
    assert ("[0] config 3, marked untuned (default) by the tune, is no longer what the untuned build runs "
            "(the packages or fallback rules changed since): ranked as an ordinary record; `tunecli tune` "
            "measures today's untuned config") in " ".join(result.stdout.split())
    monkeypatch.setenv("COLUMNS", "80")
    narrow = invoke("best", str(log)).stdout
    assert "[0] config 3, marked untuned (default) by the tune" in narrow
    assert max(len(line) for line in narrow.splitlines()) <= 80
    [workload] = json.loads(invoke("best", str(log), "--json").stdout)["workloads"]
    assert workload["chosen"] == 7 and workload["stale"].startswith("config 3, marked untuned (default)")


def test_a_record_shows_four_significant_digits(invoke: Invoke, matmul_log: Path) -> None:
    """One measurement on a shared machine is not good to seven digits: 187.1187 GFLOPS reads 187.1,
    in best and in inspect, and its 4.378e-5 ms is not 0.0000; --json keeps the whole value."""
    text = matmul_log.read_text().replace("0.0005", str(2 * 16**3 / 187.1187e9))
    matmul_log.write_text(text)
    best = invoke("best", str(matmul_log))
    assert best.exit_code == 0, best.output
    [row] = [line for line in best.stdout.splitlines() if line.strip().startswith("0 ")]
    assert row.split()[-3:] == ["187.1", "│", "0.00004378"]
    inspect = invoke("inspect", str(matmul_log))
    assert inspect.exit_code == 0, inspect.output
    assert "187.1 GFLOPS" in inspect.stdout and "187.11" not in inspect.stdout
    [workload] = json.loads(invoke("best", str(matmul_log), "--json").stdout)["workloads"]
    assert workload["best"][0]["gflops"] == pytest.approx(187.1187)
