"""measure_option / create_measure_batch: a real small tuning measurement, end to end."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.engine.measure.measure_templates import MODES
from tunecli.engine.measure import LocalBuilder, LocalRunner, create_measure_batch, measure_option
from tunecli.engine.measure.result import MeasureErrorNo, MeasureInput, MeasureResult
from tunecli.engine.task.task import create
from tunecli.engine.tuner.index_tuners import RandomTuner


def test_measure_option_accepts_local_and_rejects_other_strings():
    opt = measure_option("local", "local")
    assert set(opt) == {"builder", "runner"}
    assert isinstance(opt["builder"], LocalBuilder) and isinstance(opt["runner"], LocalRunner)
    builder = LocalBuilder(n_parallel=1)
    assert measure_option(builder, "local")["builder"] is builder
    with pytest.raises(ValueError, match="Invalid builder: rpc"):
        measure_option("rpc", "local")
    with pytest.raises(ValueError, match="Invalid runner: remote"):
        measure_option("local", "remote")


@pytest.mark.parametrize("overlap", [False, True])
def test_measure_batch_measures_a_matmul_task(overlap):
    task = create("measure_test/matmul", (32,), "llvm")
    builder = LocalBuilder(n_parallel=2)
    runner = LocalRunner(number=2, repeat=3, cooldown_interval=0)
    try:
        measure_batch = create_measure_batch(task, measure_option(builder, runner), overlap=overlap)
        assert measure_batch.n_parallel == 2 and measure_batch.overlap is overlap
        configs = [task.config_space.get(i) for i in (0, 5, 11, 35)]
        results = measure_batch([MeasureInput(task.target, task, c) for c in configs])
    finally:
        builder.close()
        runner.close()
    assert [r.error_no for r in results] == [MeasureErrorNo.NO_ERROR] * 4
    assert all(len(r.costs) == 1 and 0 < r.costs[0] < 0.1 for r in results)
    assert all(r.all_cost > r.costs[0] for r in results)


def test_auto_overlap_only_when_builders_leave_a_core_free():
    task = create("measure_test/matmul", (16,), "llvm")
    cores = os.cpu_count() or 1
    for n_parallel in (1, cores):
        builder, runner = LocalBuilder(n_parallel=n_parallel), LocalRunner()
        try:
            batch = create_measure_batch(task, measure_option(builder, runner))
            assert batch.overlap is (n_parallel < cores)
        finally:
            builder.close()
            runner.close()


def test_check_correctness_against_a_reference_build():
    task = create("measure_test/faulty", (64,), "llvm")  # config 0 ("ok") is the reference
    builder = LocalBuilder(n_parallel=2, timeout=5)
    runner = LocalRunner(cooldown_interval=0, check_correctness=True)
    try:
        measure_batch = create_measure_batch(task, measure_option(builder, runner))
        modes = ["ok", "wrong", "raise", "ok"]
        results = measure_batch([MeasureInput(task.target, task, task.config_space.get(MODES.index(m)))
                                 for m in modes])
    finally:
        builder.close()
        runner.close()
    assert [r.error_no for r in results] == [MeasureErrorNo.NO_ERROR, MeasureErrorNo.WRONG_ANSWER,
                                             MeasureErrorNo.INSTANTIATION_ERROR, MeasureErrorNo.NO_ERROR]


TEMPLATE = """
from tunecli.engine import te
from tunecli.engine.measure.result import MeasureInput
from tunecli.engine.task.task import create, get_config, template
from tunecli.engine.measure import LocalBuilder, LocalRunner, create_measure_batch, measure_option
from tunecli.engine.schedule import create_schedule


@template("user_script/scale")
def scale(n):
    A = te.placeholder((n,), name="A")
    B = te.compute((n,), lambda i: A[i] * 2.0, name="B")
    s = create_schedule(B.op)
    cfg = get_config()
    cfg.define_split("t", s[B].op.axis[0], num_outputs=2)
    cfg["t"].apply(s, B, s[B].op.axis[0])
    return s, [A, B]

"""

MAIN = """task = create("user_script/scale", (256,), "llvm")
opt = measure_option(LocalBuilder(n_parallel=1), LocalRunner(cooldown_interval=0, check_correctness=True))
batch = create_measure_batch(task, opt)
res = batch([MeasureInput(task.target, task, task.config_space.get(i)) for i in range(3)])
print(task.template_module, [int(r.error_no) for r in res])
"""


@pytest.mark.parametrize("form", ["guarded", "top-level", "stdin"])
def test_template_defined_in_a_main_script(tmp_path, form):
    """A template of the user's script reaches the workers by value: with or without an
    ``if __name__ == "__main__"`` guard (TVM's tutorials have none), and read from stdin."""
    if form == "guarded":
        guarded = "".join(f"    {line}\n" for line in MAIN.splitlines())
        code = TEMPLATE + 'if __name__ == "__main__":\n' + guarded
    else:
        code = TEMPLATE + MAIN
    script = tmp_path / "user_script.py"
    script.write_text(code)
    argv = [sys.executable, "-"] if form == "stdin" else [sys.executable, str(script)]
    out = subprocess.run(argv, input=code if form == "stdin" else None, capture_output=True, text=True,
                         timeout=120, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().splitlines()[-1] == "__main__ [0, 0, 0]"


def test_check_correctness_against_the_tasks_numpy_reference():
    task = create("measure_test/faulty", (64,), "llvm")
    task.reference = lambda a, b: a + b  # a lambda: never sent to the builder processes
    builder = LocalBuilder(n_parallel=1)
    runner = LocalRunner(cooldown_interval=0, check_correctness=True)
    try:
        measure_batch = create_measure_batch(task, measure_option(builder, runner))
        results = measure_batch([MeasureInput(task.target, task, task.config_space.get(MODES.index(m)))
                                 for m in ("wrong", "ok")])
    finally:
        builder.close()
        runner.close()
    assert [r.error_no for r in results] == [MeasureErrorNo.WRONG_ANSWER, MeasureErrorNo.NO_ERROR]
    assert "differ from the reference" in results[0].costs[0]


def test_a_tuner_drives_the_local_measurement():
    task = create("measure_test/matmul", (32,), "llvm")
    builder = LocalBuilder(n_parallel=2)
    runner = LocalRunner(number=2, repeat=3, cooldown_interval=0)
    seen: list = []
    try:
        tuner = RandomTuner(task)
        tuner.tune(n_trial=6, measure_option=measure_option(builder, runner),
                   callbacks=[lambda t, inputs, results: seen.extend(results)])
    finally:
        builder.close()
        runner.close()
    assert len(seen) == 6 and all(r.error_no == MeasureErrorNo.NO_ERROR for r in seen)
    assert tuner.best_flops > 0 and tuner.best_config is not None


@pytest.mark.parametrize("overlap", [False, True], ids=["sequential", "overlapped"])
def test_on_result_reports_each_result_as_soon_as_it_is_ready(overlap):
    # measure_batch(inputs, on_result=hook): hook(index, result) once per input, each measured
    # result right after its measurement (before the next one starts), all before the batch returns.
    task = create("measure_test/faulty", (64,), "llvm")
    builder = LocalBuilder(n_parallel=2, timeout=5)
    runner = LocalRunner(cooldown_interval=0)
    measured: list[int] = []  # configs whose measurement started
    reports: list[tuple[int, int, int]] = []  # (index, error_no, measurements started so far)
    run_one = runner.run_one

    def counting_run_one(inp, built):
        if not isinstance(built, MeasureResult):
            measured.append(inp.config.index)
        return run_one(inp, built)

    runner.run_one = counting_run_one
    modes = ["ok", "raise", "ok", "ok"]
    try:
        measure_batch = create_measure_batch(task, measure_option(builder, runner), overlap=overlap)
        inputs = [MeasureInput(task.target, task, task.config_space.get(MODES.index(m))) for m in modes]
        results = measure_batch(inputs,
                                on_result=lambda i, r: reports.append((i, int(r.error_no), len(measured))))
    finally:
        builder.close()
        runner.close()
    assert sorted(i for i, _, _ in reports) == [0, 1, 2, 3]
    assert [(i, e) for i, e, _ in sorted(reports)] == [(i, int(r.error_no)) for i, r in enumerate(results)]
    assert results[1].error_no == MeasureErrorNo.INSTANTIATION_ERROR
    ok_reports = [n for _, e, n in reports if e == 0]
    assert ok_reports == [1, 2, 3]  # the k-th measured result is reported before the (k+1)-th run


def test_runner_without_the_hook_still_reports_every_result():
    class OldRunner(LocalRunner):  # a runner written before on_result existed
        reports_each_result = False  # run() takes no on_result hook

        def run(self, measure_inputs, build_results):
            return [self.run_one(i, b) for i, b in zip(measure_inputs, build_results, strict=True)]

    task = create("measure_test/matmul", (16,), "llvm")
    builder, runner = LocalBuilder(n_parallel=2), OldRunner(cooldown_interval=0)
    reports: list[int] = []
    try:
        measure_batch = create_measure_batch(task, measure_option(builder, runner), overlap=False)
        inputs = [MeasureInput(task.target, task, task.config_space.get(i)) for i in (1, 2)]
        results = measure_batch(inputs, on_result=lambda i, r: reports.append(i))
    finally:
        builder.close()
        runner.close()
    assert reports == [0, 1] and len(results) == 2
