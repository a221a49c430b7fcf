"""Ray is the optional extra tunecli[ray]: imported only where a cluster is used."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tunecli.engine.cluster import ClusterError
from tunecli.engine.cluster.ray_import import import_ray


def test_without_ray_the_error_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # what an interpreter without Ray finds
    with pytest.raises(ClusterError, match=r"pip install 'tunecli\[ray\]'"):
        import_ray()


def test_the_job_schema_and_the_tune_command_do_not_import_ray() -> None:
    code = ("import sys, tunecli.engine.job.spec, tunecli.engine.job.measure_setup, tunecli.commands.tune; "
            "print('ray' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
