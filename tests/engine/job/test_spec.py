"""The job schema: every kind of mistake is reported with the file, the line and the field."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.engine.job.job_files import GOOD, assert_reported, mistakes, write
from tunecli.engine.job.spec import load_job
from tunecli.engine.job.tuning_spec import DEFAULT_N_TRIAL, DEFAULT_TUNER, BuilderSpec, RunnerSpec
from tunecli.engine.measure.timing_options import TimingOptions
from tunecli.engine.target import Target, host_features, host_triple, triple_arch
from tunecli.errors import JobError


def test_good_job_is_read_with_defaults(tmp_path: Path) -> None:
    job = load_job(write(tmp_path, GOOD))
    assert job.name == "small" and job.target == Target("llvm") and str(job.target) == "llvm"
    assert job.log == str(Path("logs") / "small.log")
    assert [t.template for t in job.tasks] == ["tutorial/matmul", "dense.x86"]
    assert job.tasks[0].args == [64, 64, 64, "float32"]
    assert job.tasks[1].args == {"N": 16, "K": 32, "M": 16}
    assert (job.tuner.kind, job.tuner.n_trial, job.tuner.early_stopping, job.tuner.seed) == ("ga", 20, 10, 3)
    assert job.tuner.options == {"pop_size": 8}
    assert job.builder == BuilderSpec(timeout=5.0, n_parallel=2)
    assert job.runner == RunnerSpec(timing=TimingOptions(number=2, repeat=1, min_repeat_ms=0.5,
                                                         check_correctness=True))


def test_rpc_runner_and_overrides(tmp_path: Path) -> None:
    text = GOOD.replace("runner: {number: 2, repeat: 1, min_repeat_ms: 0.5, check_correctness: true}",
                        "runner: {kind: rpc, key: rk3399, tracker: '10.0.0.1:9190', priority: 2}")
    job = load_job(write(tmp_path, text))
    assert (job.runner.kind, job.runner.options) == (
        "rpc", {"key": "rk3399", "tracker": ("10.0.0.1", 9190), "priority": 2})
    changed = job.with_overrides(n_trial=5, tuner="random", log="x.log", seed=9)
    assert (changed.tuner.kind, changed.tuner.n_trial, changed.tuner.seed) == ("random", 5, 9)
    assert changed.log == "x.log"
    assert changed.tuner.options == {}
    assert job.with_overrides(n_trial=7).tuner.options == {"pop_size": 8}


BAD = [
    # (replace this, with this, expected message after "<path>:"; "\n" between several problems)
    ("name: small", "name: small\nnmae: typo",
     "2: nmae: unknown field (expected one of: name, target, log, tasks, model, ops, graph_tuner, tuner, "
     "measure, cluster); did you mean 'name'?"),
    ("name: small\n", "", "1: missing required field 'name'"),
    ("name: small", "name: a/b",
     "1: name: expected a name made of letters, digits, '_', '.', '-', got 'a/b'"),
    ("name: small", "name: [x]", "1: name: expected a string, got a list"),
    ("target: llvm", "target: 42", "2: target: expected a string, got '42'"),
    ("target: llvm", "target: opencl -model=v100",
     "2: target: tunecli compiles for llvm, cuda, nvptx targets only, got 'opencl -model=v100'"),
    ("target: llvm", "target: cuda -arch=sm80",
     "2: target: codegen: 'sm80' in target 'cuda -arch=sm80' is not an SM architecture such as sm_80"),
    ("target: llvm", "target: llvm -mcpu=notacpu",
     "2: target: LLVM cannot compile for 'llvm -mcpu=notacpu': 'notacpu' is not a recognized processor "
     "for this target (ignoring processor); LLVM ERROR: 64-bit code requested on a subtarget that "
     "doesn't support it!"),
    ("target: llvm", "target: llvm -mattr=+bogus",
     "2: target: LLVM cannot compile for 'llvm -mattr=+bogus': '+bogus' is not a recognized feature "
     "for this target (ignoring feature)"),
    ("target: llvm", "target: llvm -mtriple=aarch64-linux-gnu",
     "2: target: code for 'llvm -mtriple=aarch64-linux-gnu' cannot run on this machine: measure it on "
     "a device with `runner: {kind: rpc, key: ..., tracker: HOST:PORT}`"),
    ("target: llvm", "target: -mcpu=x",
     "2: target: target string '-mcpu=x' must start with a kind such as 'llvm'"),
    ("  - template: dense.x86\n", "  - templat: dense.x86\n",
     "6: tasks[1].templat: unknown field (expected one of: template, args, weight); "
     "did you mean 'template'?\n"
     "6: tasks[1]: missing required field 'template'"),
    ("    args: {N: 16, K: 32, M: 16}", "    args: 16",
     "7: tasks[1].args: expected a mapping or a list, got '16'"),
    ("    args: {N: 16, K: 32, M: 16}", "    args: {N: {a: 1}, K: 32, M: 16}",
     "7: tasks[1].args.N: expected a number, a string or a list, got a mapping"),
    ("tasks:\n", "tasks: []\nx:\n",
     "4: x: unknown field (expected one of: name, target, log, tasks, model, ops, graph_tuner, tuner, "
     "measure, cluster)\n"
     "3: tasks: expected at least one task"),
    ("    args: {N: 16, K: 32, M: 16}", "    args: {N: 16, K: 32, M: 16}\n    weight: 0",
     "8: tasks[1].weight: expected a number > 0, got 0"),
    ("    args: {N: 16, K: 32, M: 16}", "    args: {N: 16, K: 32, M: 16}\n    weight: often",
     "8: tasks[1].weight: expected a number, got 'often'"),
    ("  kind: ga", "  kind: ga\n bad indent", "10: invalid YAML: expected <block end>, but found '<scalar>'"),
    ("n_parallel: 2}", "n_parallel: 2",  # an unclosed brace is noticed on the next line
     "16: invalid YAML: expected ',' or '}', but got ':' (while parsing a flow mapping on line 15)"),
]


@pytest.mark.parametrize(("old", "new", "message"), mistakes(BAD))
def test_bad_job_names_file_line_and_field(tmp_path: Path, old: str, new: str, message: str) -> None:
    assert_reported(tmp_path, old, new, message)


def test_missing_and_empty_files(tmp_path: Path) -> None:
    with pytest.raises(JobError, match=r"nope\.yaml: no such job file$"):
        load_job(tmp_path / "nope.yaml")
    empty = tmp_path / "empty.yaml"
    empty.write_text("# nothing\n")
    with pytest.raises(JobError, match=r"empty\.yaml: the job file is empty$"):
        load_job(empty)
    listed = tmp_path / "list.yaml"
    listed.write_text("- 1\n")
    with pytest.raises(JobError, match=r"list\.yaml:1: expected a mapping, got a list$"):
        load_job(listed)


def test_the_target_is_parsed_once_and_travels_to_the_build_worker(tmp_path: Path) -> None:
    import pickle

    from tunecli.engine.job.tasks import create_task
    from tunecli.engine.measure.builder import make_build_job

    job = load_job(write(tmp_path, GOOD.replace("target: llvm", "target: llvm -mcpu=x86-64")))
    assert isinstance(job.target, Target) and str(job.target) == "llvm -mcpu=x86-64"
    task = create_task(job, 0)
    assert task.target is job.target
    build = pickle.loads(pickle.dumps(make_build_job(task, task.config_space.get(0))))
    assert build.target == job.target and pickle.loads(build.task_blob).target == job.target


def test_every_problem_is_reported_in_one_run(tmp_path: Path) -> None:
    text = GOOD.replace("name: small\n", "").replace("  - template: dense.x86", "  - templat: dense.x86")
    text = text.replace("n_trial: 20", "n_trial: x").replace("{timeout: 5,", "{timeout: -5,")
    path = write(tmp_path, text)
    with pytest.raises(JobError) as info:
        load_job(path)
    assert info.value.problems == tuple(f"{path}:{line}" for line in (
        "1: missing required field 'name'",
        "5: tasks[1].templat: unknown field (expected one of: template, args, weight); "
        "did you mean 'template'?",
        "5: tasks[1]: missing required field 'template'",
        "9: tuner.n_trial: expected an integer, got 'x'",
        "14: measure.builder.timeout: expected a number > 0, got -5",
    ))
    assert str(info.value) == "\n".join(info.value.problems)


def test_a_log_given_on_the_command_line_is_checked_too(tmp_path: Path) -> None:
    job = load_job(write(tmp_path, GOOD))
    with pytest.raises(JobError, match=rf"^{tmp_path}: is a directory, not a log file$"):
        job.with_overrides(log=str(tmp_path))
    assert job.with_overrides(log=str(tmp_path / "new.log")).log == str(tmp_path / "new.log")


def test_the_readme_shows_the_smallest_job_and_the_defaults(tmp_path: Path) -> None:
    readme = (Path(__file__).resolve().parents[3] / "README.md").read_text()
    smallest = readme.split("The smallest job", 1)[1].split("```yaml\n", 1)[1].split("```", 1)[0]
    job = load_job(write(tmp_path, smallest))
    assert (job.tuner.kind, job.tuner.n_trial) == (DEFAULT_TUNER, DEFAULT_N_TRIAL)
    assert f"tuner:                           # optional (default: kind {DEFAULT_TUNER}, n_trial " \
           f"{DEFAULT_N_TRIAL})" in readme


@pytest.mark.parametrize("target", ["cuda", "cuda -arch=sm_90"])
def test_a_cuda_job_is_valid_anywhere_with_a_local_runner(tmp_path: Path, target: str) -> None:
    """Whether this machine has the GPU a local runner needs is for ``tune`` to find out."""
    job = load_job(write(tmp_path, GOOD.replace("target: llvm", f"target: {target}")))
    assert job.target == Target(target) and job.target.keys == ["cuda", "gpu"]
    assert job.runner.kind == "local"


def test_a_local_runner_for_a_target_needing_features_this_cpu_lacks_names_them(tmp_path: Path) -> None:
    lacking = sorted(f[1:] for f in host_features().split(",") if f.startswith("-"))
    if not lacking:
        pytest.skip("this CPU reports every feature LLVM knows")
    feature = "avx512f" if "avx512f" in lacking else lacking[0]
    path = write(tmp_path, GOOD.replace("target: llvm", f"target: llvm -mattr=+{feature}"))
    with pytest.raises(JobError) as info:
        load_job(path)
    assert info.value.problems == (
        f"{path}:2: target: code for 'llvm -mattr=+{feature}' cannot run on this machine (its CPU lacks "
        f"{feature}): measure it on a device with `runner: {{kind: rpc, key: ..., tracker: HOST:PORT}}`",)
    if triple_arch(host_triple()) == "x86_64" and "avx512f" in lacking:
        path = write(tmp_path, GOOD.replace("target: llvm", "target: llvm -mcpu=skylake-avx512"))
        with pytest.raises(JobError, match=r"cannot run on this machine \(its CPU lacks [a-z0-9, ]*avx512f"):
            load_job(path)
