"""Templates and arguments of a job: built-ins, user template files, and their errors."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from tunecli.engine.job.spec import load_job
from tunecli.engine.job.tasks import create_task, create_tasks, kernel_job_template, physical_memory
from tunecli.engine.ops.registry import builtin_names
from tunecli.engine.target import Target
from tunecli.errors import JobError

TEMPLATE = Path(__file__).parent / "data" / "scaled_add.py"


def job_file(tmp_path: Path, tasks: str) -> str:
    path = tmp_path / "job.yaml"
    path.write_text("name: t\ntasks:\n" + textwrap.indent(textwrap.dedent(tasks), "  ")
                    + "tuner: {kind: random, n_trial: 2}\n")
    return str(path)


def test_builtin_by_name_and_by_position_give_the_same_workload(tmp_path: Path) -> None:
    path = job_file(tmp_path, """\
        - template: dense.x86
          args: {M: 8, N: 16, K: 4}
        - template: dense.x86
          args: [8, 16, 4]
        """)
    job = load_job(path)
    first, second = create_task(job, 0), create_task(job, 1)
    assert first.workload == second.workload == ("dense.x86", 8, 16, 4, "float32")
    assert first.flop == 2 * 8 * 16 * 4
    with pytest.raises(JobError) as info:
        create_tasks(job)
    assert str(info.value) == f"{path}:5: tasks[1]: the same task as tasks[0] (dense.x86(8, 16, 4, " \
        "'float32'))"


def test_seed_workload_space_prints_like_tvm(tmp_path: Path) -> None:
    path = job_file(tmp_path, """\
        - template: tutorial/conv2d_no_batching
          args: {N: 1, H: 7, W: 7, CO: 512, CI: 512, KH: 3, KW: 3, stride: [1, 1], padding: [1, 1]}
        """)
    task = create_task(load_job(path), 0)
    assert task.args[-2:] == ((1, 1), (1, 1))
    assert str(task.config_space).splitlines()[0] == "ConfigSpace (len=10454400, space_map="


def test_user_template_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(TEMPLATE.parent)
    path = job_file(tmp_path, """\
        - template: scaled_add.py:scaled_add
          args: {n: 64, factor: 2.0}
        - template: scaled_add.py:scaled_add
          args: [32, 3.0, float32]
        """)
    first, second = create_tasks(load_job(path))
    assert first.name == second.name == "test_job/scaled_add"
    assert first.args == (64, 2.0, "float32") and second.args == (32, 3.0, "float32")
    assert len(first.config_space) == 7  # 2-way splits of 64


@pytest.mark.parametrize(("tasks", "message"), [
    ("- template: dense.x68\n  args: [1, 2, 3]\n",
     f"3: tasks[0].template: unknown template 'dense.x68' (built-in templates: {', '.join(builtin_names())}; "
     "or use \"path/to/file.py:function\")"),
    ("- template: dense.x86\n  args: {M: 16, N: 16}\n",
     "4: tasks[0].args: dense.x86: missing arguments ['K']; expected ('M', 'N', 'K', 'dtype')"),
    ("- template: dense.x86\n  args: {M: 16, N: 16, K: 8, L: 3}\n",
     "4: tasks[0].args: dense.x86: unknown arguments ['L']; expected ('M', 'N', 'K', 'dtype')"),
    ("- template: dense.x86\n  args: {M: -16, N: 16, K: 8}\n",
     "4: tasks[0].args: template dense.x86 rejects (-16, 16, 8, 'float32'): placeholder data: shape entries "
     "must be positive, got (-16, 8)"),
    ("- template: conv2d_nchw.x86\n"
     "  args: {N: 1, H: 4, W: 4, CI: 8, CO: 8, KH: 7, KW: 7, stride: 1, padding: 0}\n",
     "4: tasks[0].args: template conv2d_nchw.x86 rejects (1, 4, 4, 8, 8, 7, 7, 1, 0, 1, 'float32'): window "
     "(7, 7) (dilation 1) does not fit input (4, 4) with padding 0"),
    ("- template: nowhere.py:f\n", "3: tasks[0].template: no such template file 'nowhere.py'"),
    ("- template: scaled_add.py:missing\n", "3: tasks[0].template: scaled_add.py has no function 'missing'"),
    ("- template: scaled_add.py:not_a_template\n",
     "3: tasks[0].template: scaled_add.py:not_a_template is not decorated with @autotvm.template(\"name\")"),
    ("- template: scaled_add.py:scaled_add\n  args: {n: 8}\n",
     "4: tasks[0].args: template test_job/scaled_add(n, factor, dtype='float32'): missing a required "
     "argument: 'factor'"),
])
def test_bad_task(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, tasks: str, message: str) -> None:
    monkeypatch.chdir(TEMPLATE.parent)
    path = job_file(tmp_path, tasks)
    with pytest.raises(JobError) as info:
        create_tasks(load_job(path))
    assert str(info.value) == f"{path}:{message}"


def test_broken_template_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "broken.py").write_text("import no_such_module_here\n")
    monkeypatch.chdir(tmp_path)
    path = job_file(tmp_path, "- template: broken.py:f\n")
    with pytest.raises(JobError) as info:
        create_tasks(load_job(path))
    assert str(info.value) == (f"{path}:3: tasks[0].template: importing broken.py failed: "
                               "ModuleNotFoundError: No module named 'no_such_module_here'")


def test_builtin_tasks_carry_a_numpy_reference_that_pickles(tmp_path: Path) -> None:
    # so a runner with check_correctness compares with numpy, in the worker processes too
    import pickle

    import numpy as np

    path = job_file(tmp_path, """\
        - template: dense.x86
          args: {M: 4, N: 8, K: 16}
        - template: tutorial/matmul
          args: [4, 16, 8]
        """)
    dense, matmul = create_tasks(load_job(path))
    rng = np.random.default_rng(0)
    a, w, b = (rng.random(shape, dtype=np.float32) for shape in ((4, 16), (8, 16), (16, 8)))
    for task, inputs, want in ((dense, (a, w), a @ w.T), (matmul, (a, b), a @ b)):
        clone = pickle.loads(pickle.dumps(task))
        assert clone.workload == task.workload
        np.testing.assert_allclose(clone.reference(*inputs), want, rtol=1e-5)


def test_a_template_file_may_reuse_a_builtin_name(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from tunecli.engine.task.task import TASK_TABLE

    monkeypatch.setitem(TASK_TABLE, "tutorial/matmul", TASK_TABLE["tutorial/matmul"])  # restored after
    (tmp_path / "port.py").write_text(textwrap.dedent('''\
        from tunecli import autotvm, te


        @autotvm.template("tutorial/matmul")
        def matmul(N, L, M, dtype="float32"):
            left = te.placeholder((N, L), name="left", dtype=dtype)
            right = te.placeholder((L, M), name="right", dtype=dtype)
            inner = te.reduce_axis((0, L), name="inner")
            product = te.compute((N, M), lambda r, c: te.sum(left[r, inner] * right[inner, c], axis=inner))
            autotvm.get_config().define_knob("unused", [0, 1, 2])
            return te.create_schedule(product.op), [left, right, product]
        '''))
    monkeypatch.chdir(tmp_path)
    path = job_file(tmp_path, "- template: port.py:matmul\n  args: {N: 4, L: 4, M: 4}\n")
    (task,) = create_tasks(load_job(path))
    assert task.workload == ("tutorial/matmul", 4, 4, 4, "float32")
    assert list(task.config_space.space_map) == ["unused"]  # the user's template, not the built-in
    assert task.reference is None  # checked against its config 0, not the built-in's numpy


COUNTING_TEMPLATE = '''\
import os
from pathlib import Path

from tunecli import autotvm, te

with open(Path(__file__).with_suffix(".pids"), "a") as _pids:
    _pids.write(f"{os.getpid()} {__name__}\\n")


@autotvm.template("test_job/counted_add")
def counted_add(n):
    a = te.placeholder((n,), name="a")
    b = te.compute((n,), lambda i: a[i] + 1.0, name="b")
    s = te.create_schedule(b.op)
    cfg = autotvm.get_config()
    cfg.define_split("tile", s[b].op.axis[0], num_outputs=2)
    cfg["tile"].apply(s, b, s[b].op.axis[0])
    return s, [a, b]
'''


def test_a_template_file_is_executed_once_in_the_tuner_and_once_per_worker(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import os
    import sys
    from collections import Counter

    from tunecli.engine.actions.job_file import apply_job_file, inspect_job_file, tune_job
    from tunecli.engine.measure import interleaved
    from tunecli.engine.task.task import TASK_TABLE
    from tunecli.engine.task.template_file import template_module_name

    (tmp_path / "counted.py").write_text(COUNTING_TEMPLATE)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(interleaved, "SETTLE_S", 0.0)  # apply's timings are not what is checked here
    # what the file registers is removed again after the test
    monkeypatch.setitem(TASK_TABLE, "test_job/counted_add", None)
    monkeypatch.delitem(TASK_TABLE, "test_job/counted_add")
    monkeypatch.setitem(sys.modules, template_module_name("counted.py"), None)
    monkeypatch.delitem(sys.modules, template_module_name("counted.py"))
    (tmp_path / "job.yaml").write_text(textwrap.dedent("""\
        name: counted
        log: counted.log
        tasks:
          - template: counted.py:counted_add
            args: [64]
        tuner: {kind: random, n_trial: 6, seed: 0}
        measure:
          builder: {n_parallel: 2}
          runner: {number: 1, repeat: 1, check_correctness: true}
        """))
    summary = tune_job("job.yaml")
    assert summary.ok and summary.tasks[0].measured == 6 and summary.tasks[0].errors == 0
    (view,) = inspect_job_file("job.yaml", config=summary.tasks[0].best_index)
    assert view.lowered is not None
    report = apply_job_file("job.yaml", "counted.log")
    assert report.ok and report.tasks[0].correct and not report.tasks[0].fallback
    lines = (tmp_path / "counted.pids").read_text().splitlines()
    pids = Counter(line.split()[0] for line in lines)
    assert set(pids.values()) == {1}, pids  # no process executed the file twice
    assert {line.split()[1] for line in lines} == {template_module_name("counted.py")}  # one name
    assert str(os.getpid()) in pids and len(pids) >= 3  # this process, the builders, the runner


def test_every_bad_task_is_reported_at_once(tmp_path: Path) -> None:
    path = job_file(tmp_path, """\
        - template: dense.x68
        - template: dense.x86
          args: {M: 8, N: 8, K: 8}
        - template: dense.x86
          args: {M: -1, N: 8, K: 8}
        - template: dense.x86
          args: [8, 8, 8]
        """)
    job = load_job(path)
    with pytest.raises(JobError) as info:
        create_tasks(job)
    assert [p.split(": ", 2)[:2] for p in info.value.problems] == [
        [f"{path}:3", "tasks[0].template"], [f"{path}:7", "tasks[2].args"], [f"{path}:8", "tasks[3]"]]
    # one rule for every command: the duplicate is reported when only task 1 is created too
    with pytest.raises(JobError, match=r"tasks\[3\]: the same task as tasks\[1\]"):
        create_tasks(job, [1])


def test_sizes_beyond_32_bit_indexing_are_refused_before_tracing(tmp_path: Path) -> None:
    path = job_file(tmp_path, """\
        - template: dense.x86
          args: {M: 99999999999999999999, N: 32, K: 32}
        """)
    with pytest.raises(JobError) as info:
        create_tasks(load_job(path))
    assert str(info.value) == (f"{path}:4: tasks[0].args: 99999999999999999999 is beyond what 32-bit "
                               "indexing addresses (sizes up to 2147483647)")


@pytest.mark.parametrize(("written", "shown"), [("1e1", "10.0 (write 10)"), ("8.0", "8.0 (write 8)")])
def test_a_size_written_as_a_float_is_refused(tmp_path: Path, written: str, shown: str) -> None:
    """YAML reads 1e1 and 8.0 as floats: a built-in template's sizes are whole numbers, so the job says
    which to write instead of logging a workload dense.x86(10.0, ...) (16.5 gets the template's own
    error)."""
    path = job_file(tmp_path, f"""\
        - template: dense.x86
          args: {{M: {written}, N: 16, K: 16}}
        """)
    with pytest.raises(JobError) as info:
        create_tasks(load_job(path))
    assert str(info.value) == (f"{path}:4: tasks[0].args: template dense.x86 takes whole-number sizes, "
                               f"not {shown}")


def test_buffers_must_fit_32_bit_indexing_and_the_machine(tmp_path: Path) -> None:
    path = job_file(tmp_path, """\
        - template: dense.x86
          args: {M: 256, N: 512, K: 128}
        - template: dense.x86
          args: {M: 1000000, N: 1000000, K: 1000000}
        """)
    job = load_job(path)
    need = 4 * (256 * 128 + 512 * 128 + 256 * 512)
    assert create_task(job, 0, memory=need).flop == 2 * 256 * 512 * 128
    with pytest.raises(JobError, match="more than this machine's memory"):
        create_task(job, 0, memory=need - 1)
    with pytest.raises(JobError) as info:
        create_task(job, 0, memory=need // 2)
    assert str(info.value) == (f"{path}:4: tasks[0].args: template dense.x86(256, 512, 128, 'float32'): "
                               "the kernel's buffers take 896.00 KiB, more than this machine's memory "
                               "(448.00 KiB)")
    with pytest.raises(JobError, match=r"tensor data\[1000000, 1000000\] has 1000000000000 elements, more "
                                       r"than 32-bit indexing addresses \(2147483647\)$"):
        create_task(job, 1)
    assert physical_memory() > 0


def test_a_conv2d_nchw_task_runs_through_the_blocked_layouts_on_x86(tmp_path: Path) -> None:
    """On x86 a float32 conv2d_nchw.x86 task runs as relay.build runs the convolution: Winograd for
    3x3 stride 1, the direct NCHWc schedules otherwise; the arguments stay the job's."""
    path = job_file(tmp_path, """\
        - template: conv2d_nchw.x86
          args: {N: 1, H: 8, W: 8, CI: 8, CO: 16, KH: 3, KW: 3, stride: 1, padding: 1}
        - template: conv2d_nchw.x86
          args: {N: 1, H: 14, W: 14, CI: 8, CO: 16, KH: 1, KW: 1, stride: 2, padding: 0}
        - template: conv2d_nchw.x86
          args: {N: 1, H: 8, W: 8, CI: 8, CO: 16, KH: 3, KW: 3, stride: 1, padding: 1, dtype: int8}
        """)
    tasks = create_tasks(load_job(path))
    assert [t.name for t in tasks] == ["conv2d_nchw_winograd.x86", "conv2d_nchw_blocked.x86",
                                       "conv2d_nchw.x86"]
    assert tasks[0].args == (1, 8, 8, 8, 16, 3, 3, 1, 1, 1, "float32")
    assert tasks[0].flop == 2 * 16 * 8 * 8 * 8 * 9  # the direct convolution's, as conv2d_nchw.x86 counts
    arm = Target("llvm -device=arm_cpu -mtriple=aarch64-linux-gnu -mattr=+neon")
    assert kernel_job_template("conv2d_nchw.x86", tasks[0].args, arm) == "conv2d_nchw.x86"
    assert kernel_job_template("dense.x86", (8, 8, 8, "float32"), Target("llvm")) == "dense.x86"


def test_a_conv2d_nchw_task_and_the_template_it_runs_as_are_the_same_task(tmp_path: Path) -> None:
    path = job_file(tmp_path, """\
        - template: conv2d_nchw.x86
          args: {N: 1, H: 14, W: 14, CI: 8, CO: 16, KH: 1, KW: 1, stride: 2, padding: 0}
        - template: conv2d_nchw_blocked.x86
          args: [1, 14, 14, 8, 16, 1, 1, 2, 0]
        """)
    with pytest.raises(JobError, match=r":5: tasks\[1\]: the same task as tasks\[0\] "
                                        r"\(conv2d_nchw_blocked.x86"):
        create_tasks(load_job(path))


def test_a_bad_conv2d_nchw_task_is_reported_under_the_name_the_job_gives(tmp_path: Path) -> None:
    path = job_file(tmp_path, """\
        - template: conv2d_nchw.x86
          args: {N: 1, H: 4, W: 4, CI: 8, CO: 8, KH: 7, KW: 7, stride: 1, padding: 0}
        """)
    with pytest.raises(JobError, match=r"template conv2d_nchw.x86 rejects \(1, 4, 4, 8, 8, 7, 7, 1, 0, 1, "
                                        r"'float32'\): window"):
        create_tasks(load_job(path))


def test_a_conv_kernel_job_tuned_a_few_trials_runs_the_fast_template_and_equals_numpy(tmp_path: Path) -> None:
    from tunecli.engine.actions.job_file import apply_job_file, inspect_job_file, tune_job
    from tunecli.engine.log.record import load_from_file

    log = tmp_path / "conv.log"
    path = tmp_path / "conv.yaml"
    path.write_text(textwrap.dedent(f"""\
        name: conv
        log: {log}
        tasks:
          - {{template: conv2d_nchw.x86, args: {{N: 1, H: 10, W: 10, CI: 8, CO: 16, KH: 3, KW: 3, stride: 1,
                                                  padding: 1}}}}
          - {{template: conv2d_nchw.x86, args: {{N: 1, H: 10, W: 10, CI: 8, CO: 16, KH: 3, KW: 3, stride: 2,
                                                  padding: 1}}}}
        tuner: {{kind: random, n_trial: 2, seed: 0}}
        measure:
          builder: {{n_parallel: 2}}
          runner: {{number: 2, repeat: 1, min_repeat_ms: 0, check_correctness: true}}
        """))
    tune_job(str(path))
    names = ["conv2d_nchw_winograd.x86", "conv2d_nchw_blocked.x86"]
    records = list(load_from_file(str(log)))
    assert sorted({inp.task.name for inp, _ in records}) == sorted(names)  # the log names what ran
    assert all(res.ok for _, res in records), records
    report = apply_job_file(str(path))
    assert [t.label.split("(")[0] for t in report.tasks] == names
    for applied in report.tasks:
        assert not applied.fallback and applied.checked_against == "numpy" and applied.correct, applied
    views = inspect_job_file(str(path))
    assert [v.label.split("(")[0] for v in views] == names
