"""The graph tuner step of ``tune``: it measures with the tune's worker pools and takes the tasks the
tune extracted instead of making them again."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import pytest

from tests.engine.job.tiny_network import INPUT, SHAPE, write_tiny_onnx
from tunecli.engine.actions.job_file import tune_job
from tunecli.engine.graph_tuner import base_graph_tuner
from tunecli.engine.job import measure_setup

pytest.importorskip("onnx")


@pytest.mark.slow
def test_the_graph_tuner_step_reuses_the_tunes_tasks_and_pools(tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    onnx = write_tiny_onnx(tmp_path / "tiny.onnx")
    job = tmp_path / "net.yaml"
    job.write_text(textwrap.dedent(f"""\
        name: net
        log: {tmp_path / 'net.log'}
        model: {{onnx: {onnx}, input: {{{INPUT}: [{', '.join(map(str, SHAPE))}]}}}}
        graph_tuner: {{kind: dp, max_sch_num: 4, min_exec_num: 10}}
        tuner: {{kind: random, n_trial: 4, seed: 0}}
        measure:
          builder: {{timeout: 20, n_parallel: 2}}
          runner: {{number: 1, repeat: 1, timeout: 20}}
        """))
    created: list[str] = []
    options: list[Any] = []
    real_create, real_option = base_graph_tuner.create_task, measure_setup.make_measure_option

    def create(name: str, *args: Any, **kwargs: Any) -> Any:
        created.append(name)
        return real_create(name, *args, **kwargs)

    def make_option(*args: Any) -> Any:
        options.append(real_option(*args))
        return options[-1]

    monkeypatch.setattr(base_graph_tuner, "create_task", create)
    monkeypatch.setattr("tunecli.engine.actions.job_file.make_measure_option", make_option)
    summary = tune_job(str(job))
    assert summary.graph is not None and summary.graph.error is None and summary.graph.convolutions == 2
    assert not [name for name in created if name.startswith("conv2d")]  # only layout transforms are made
    assert len(options) == 1  # one builder and runner (worker pools) for the kernels and the graph tuner
