"""The ``cluster`` section of a job: where its configs are built and timed, checked before anything runs."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from tunecli.engine.job.cluster_spec import ClusterSpec
from tunecli.engine.job.spec import load_job
from tunecli.engine.job.tuning_spec import max_builders
from tunecli.engine.target import host_cpu
from tunecli.errors import JobError

GOOD = """\
name: small
tasks: [{template: tutorial/matmul, args: [16, 16, 16]}]
cluster: {kind: ray, address: "10.0.0.1:6379", resources: {tunecli-cpu-znver4: 1}}
"""


def load(tmp_path: Path, text: str):
    path = tmp_path / "job.yaml"
    path.write_text(textwrap.dedent(text))
    return load_job(path)


def problems(tmp_path: Path, text: str) -> list[str]:
    with pytest.raises(JobError) as info:
        load(tmp_path, text)
    return [p.split(":", 1)[1] for p in info.value.problems]


def test_a_cluster_section_is_read_whole(tmp_path: Path) -> None:
    job = load(tmp_path, GOOD)
    assert job.cluster == ClusterSpec("ray", "10.0.0.1:6379", {"tunecli-cpu-znver4": 1.0})


def test_the_address_defaults_to_auto_and_resources_to_the_targets_cpu(tmp_path: Path) -> None:
    job = load(tmp_path, GOOD.replace(GOOD.splitlines()[2], "cluster: {kind: ray}"))
    assert job.cluster == ClusterSpec("ray", "auto", {})


def test_a_job_without_cluster_has_none(tmp_path: Path) -> None:
    assert load(tmp_path, GOOD.replace(GOOD.splitlines()[2], "")).cluster is None


@pytest.mark.parametrize(("old", "new", "message"), [
    ('address: "10.0.0.1:6379"', "address: somewhere",
     "3: cluster.address: expected auto, ray://HOST:10001 or HOST:6379 (the head's GCS port), "
     "got 'somewhere'"),
    ("kind: ray", "kind: slurm", "3: cluster.kind: expected one of ray, got 'slurm'"),
    ("tunecli-cpu-znver4: 1", "tunecli-cpu-znver4: 0", "3: cluster.resources.tunecli-cpu-znver4: expected a "
     "number > 0, got 0"),
    ("resources: {tunecli-cpu-znver4: 1}", "resources: {}", "3: cluster.resources: expected at least one "
     "resource, e.g. {tunecli-cpu-znver4: 1}"),
    ("resources:", "nodes:", "3: cluster.nodes: unknown field (expected one of: kind, address, resources)"),
])
def test_a_bad_cluster_field_names_its_line(tmp_path: Path, old: str, new: str, message: str) -> None:
    assert problems(tmp_path, GOOD.replace(old, new)) == [message]


def test_a_gpu_target_or_an_rpc_runner_cannot_use_a_cluster(tmp_path: Path) -> None:
    text = GOOD + "target: cuda\nmeasure: {runner: {kind: rpc, key: k, tracker: '127.0.0.1:9190'}}\n"
    found = problems(tmp_path, text)
    assert found == ["3: cluster: a cluster measures CPU kernels; 'cuda' is a GPU target",
                     "3: cluster: a cluster builds and times on its nodes: measure.runner.kind must be local "
                     "(its timing settings apply there), got 'rpc'"]


def test_a_target_of_another_cpu_is_no_problem_with_a_cluster(tmp_path: Path) -> None:
    job = load(tmp_path, GOOD + "target: llvm -mcpu=a64fx -mtriple=aarch64-linux-gnu\n")
    assert job.cluster is not None and job.target.mcpu == "a64fx"


def test_the_command_line_address_gives_or_replaces_the_jobs(tmp_path: Path) -> None:
    job = load(tmp_path, GOOD)
    assert job.with_overrides(cluster="ray://head:10001").cluster == ClusterSpec(
        "ray", "ray://head:10001", {"tunecli-cpu-znver4": 1.0})
    plain = load(tmp_path, GOOD.replace(GOOD.splitlines()[2], ""))
    assert plain.with_overrides(cluster="auto").cluster == ClusterSpec("ray", "auto", {})
    assert plain.with_overrides().cluster is None
    with pytest.raises(JobError, match="nowhere: expected auto"):
        plain.with_overrides(cluster="nowhere")


def test_the_graph_tuner_of_a_cluster_job_must_run_on_a_machine_of_the_targets_cpu(tmp_path: Path) -> None:
    model = "name: small\nmodel: {name: resnet-18}\ngraph_tuner: {kind: dp}\n"
    here = load(tmp_path, model + "cluster: {kind: ray}\n")
    assert here.cluster is not None and here.graph_tuner is not None  # the target is this machine's CPU
    other = "sapphirerapids" if host_cpu() != "sapphirerapids" else "znver4"
    found = problems(tmp_path, model + f"target: llvm -mcpu={other}\ncluster: {{kind: ray}}\n")
    assert found == [f"5: cluster: the graph tuner times layout transforms on this machine, whose CPU is "
                     f"{host_cpu()}, not the target's {other}: tune the kernels on the cluster without "
                     "graph_tuner, then run the graph tuner on a machine of that CPU"]


def test_a_cluster_jobs_builders_are_not_bounded_by_this_machines_cores(tmp_path: Path) -> None:
    many = max_builders() * 4  # what a node with many more cores than the tuning machine builds at once
    text = GOOD + f"measure: {{builder: {{n_parallel: {many}}}}}\n"
    assert load(tmp_path, text).builder.n_parallel == many
    without_cluster = text.replace(GOOD.splitlines()[2], "")
    assert problems(tmp_path, without_cluster) == [
        f"4: measure.builder.n_parallel: expected an integer between 1 and {max_builders()} "
        f"(4 x the {max_builders() // 4} cores of this machine), got {many}"]
