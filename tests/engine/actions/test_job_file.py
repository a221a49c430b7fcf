"""Each command's entry reads the job file once and hands the loaded Job to the actions."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import pytest

from tunecli.engine.actions.job_file import inspect_job_file
from tunecli.engine.job import spec


def test_inspect_reads_the_yaml_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    job = tmp_path / "job.yaml"
    job.write_text(textwrap.dedent("""\
        name: once
        tasks:
          - template: tutorial/matmul
            args: [16, 16, 16, float32]
        """))
    reads: list[Any] = []
    real = spec.load_document

    def load_document(path: Any) -> Any:
        reads.append(path)
        return real(path)

    monkeypatch.setattr(spec, "load_document", load_document)
    (view,) = inspect_job_file(str(job), config=0)
    assert view.lowered and view.config is not None
    assert reads == [str(job)]
