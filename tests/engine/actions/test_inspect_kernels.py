"""``inspect`` of a kernel job: each task says which template it runs as when the job names another,
and which config ``apply`` would build with where it came from."""

from __future__ import annotations

import textwrap
from pathlib import Path

from tunecli.engine.actions.inspect import inspect_kernels
from tunecli.engine.job.spec import load_job
from tunecli.engine.log.record import encode
from tunecli.engine.measure.result import MeasureInput, MeasureResult
from tunecli.engine.ops.x86.conv2d_nchw_blocked import twin_workload
from tunecli.engine.target import Target
from tunecli.engine.task.task import create

ARGS = {"N": 1, "H": 14, "W": 14, "CI": 16, "CO": 32, "KH": 1, "KW": 1, "stride": 2, "padding": 0}


def write_job(tmp_path: Path, log: Path) -> Path:
    job = tmp_path / "job.yaml"
    job.write_text(textwrap.dedent(f"""\
        name: k
        target: llvm
        log: {log}
        tasks:
          - {{template: conv2d_nchw.x86, args: {ARGS}}}
          - {{template: dense.x86, args: {{M: 4, N: 16, K: 8}}}}
        """).replace("'", ""))
    return job


def test_a_kernel_job_says_what_each_task_runs_as_and_where_its_config_comes_from(tmp_path: Path) -> None:
    log = tmp_path / "k.log"
    views = inspect_kernels(load_job(str(write_job(tmp_path, log))))
    assert views[0].named == "conv2d_nchw.x86" and views[0].label.startswith("conv2d_nchw_blocked.x86(")
    assert views[1].named is None and views[1].label.startswith("dense.x86(")
    assert views[0].chosen == "fallback" and views[0].config_source == "default"


def test_a_logged_record_of_the_twin_template_is_what_apply_builds(tmp_path: Path) -> None:
    log = tmp_path / "k.log"
    job = load_job(str(write_job(tmp_path, log)))
    twin = twin_workload(("conv2d_nchw_blocked.x86", 1, 14, 14, 16, 32, 1, 1, 2, 0, 1, "float32"))
    target = Target("llvm")
    task = create(twin[0], twin[1:], target)
    log.write_text(encode(MeasureInput(target, task, task.config_space.get(3)),
                          MeasureResult([1e-4], 0, 0.1, 0.0)) + "\n")
    (view,) = inspect_kernels(job, task=0)
    assert view.chosen.startswith("#3 ")
    assert view.config_source.startswith("log: conv2d_NCHWc.x86(float32[1,16,14,14], float32[32,16,1,1]")
    assert view.config_source.endswith(f"in {log}")
