"""Telling a job file from a tuning log named ``.yaml`` (``commands.log_args.is_job_file``), as
``inspect``, ``best`` and ``apply --log`` do."""

from __future__ import annotations

from pathlib import Path

from tunecli.commands.log_args import is_job_file

from .conftest import Invoke

FLOW_JOB = "{name: flow, tasks: [{template: tutorial/matmul, args: [16, 16, 16]}]}\n"


def test_a_yaml_file_is_a_job_unless_it_starts_with_a_record(matmul_log: Path, tmp_path: Path) -> None:
    named_yaml = tmp_path / "records.yaml"
    named_yaml.write_bytes(b"# kept from an old tune\n\n" + matmul_log.read_bytes())
    flow = tmp_path / "flow.yaml"
    flow.write_text(FLOW_JOB)  # a job in YAML's flow style starts with "{" too
    block = tmp_path / "block.yml"
    block.write_text("name: block\ntasks: []\n")
    assert not is_job_file(str(named_yaml)) and not is_job_file(str(matmul_log))
    assert is_job_file(str(flow)) and is_job_file(str(block))


def test_inspect_reads_a_log_named_yaml_as_a_log(invoke: Invoke, matmul_log: Path, tmp_path: Path) -> None:
    """The error of ``tune LOG.yaml`` says ``tunecli inspect LOG.yaml`` shows the log's tasks: it does."""
    named_yaml = tmp_path / "records.yaml"
    named_yaml.write_bytes(matmul_log.read_bytes())
    refused = invoke("tune", str(named_yaml))
    assert refused.exit_code == 2 and f"`tunecli inspect {named_yaml}`" in refused.stderr
    result = invoke("inspect", str(named_yaml))
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith(f"{named_yaml}: 3 records, errors: RUNTIME_DEVICE 1")


def test_best_refuses_a_job_in_flow_style(invoke: Invoke, tmp_path: Path) -> None:
    flow = tmp_path / "flow.yaml"
    flow.write_text(FLOW_JOB)
    result = invoke("best", str(flow))
    assert result.exit_code == 2
    assert f"{flow}: is a job file, not a tuning log" in result.stderr


def test_apply_of_a_log_says_which_file_to_pass(invoke: Invoke, matmul_log: Path) -> None:
    """``apply LOG`` (as ``tune LOG``): the message says the job file goes first and the log with --log."""
    result = invoke("apply", str(matmul_log))
    assert result.exit_code == 2
    assert result.stderr.startswith(f"error: {matmul_log}: is a tuning log (records of measured configs)")
    assert result.stderr.rstrip().endswith("`tunecli tune` and `tunecli apply` take the job file that wrote "
                                           f"it (with `--log {matmul_log}` to tune into or apply this log)")
