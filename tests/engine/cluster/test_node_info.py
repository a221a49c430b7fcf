"""What a node is (CPU, software) and the rule that it must run the driver's software."""

from __future__ import annotations

from tunecli.engine.cluster.node_info import (
    CHECKED_PACKAGES,
    NodeInfo,
    default_resource,
    software_versions,
    unlike_nodes,
    version_problems,
    wanted_cpu,
)
from tunecli.engine.runtime.threads import get_num_threads
from tunecli.engine.target import Target, host_cpu, host_features

DRIVER = (("python", "3.11"), ("tunecli", "0.1.0"), ("llvmlite", "0.45.0"))


def node(versions: tuple, address: str = "10.0.0.7") -> NodeInfo:
    return NodeInfo("f00dcafe" * 7, address, "znver4", "+avx512f", 8, versions, 8)


def test_the_versions_compared_are_pythons_and_the_checked_packages() -> None:
    names = [name for name, _ in software_versions()]
    assert names == ["python", *CHECKED_PACKAGES] and CHECKED_PACKAGES == ("tunecli", "llvmlite")
    assert "not installed" not in dict(software_versions()).values()


def test_nodes_with_the_drivers_software_have_no_problem() -> None:
    assert version_problems([node(DRIVER), node(DRIVER, "10.0.0.8")], DRIVER) == []


def test_each_node_that_differs_is_one_line_naming_it_and_the_versions() -> None:
    old = (("python", "3.11"), ("tunecli", "0.0.9"), ("llvmlite", "0.44.0"))
    assert version_problems([node(DRIVER), node(old)], DRIVER) == [
        "node 10.0.0.7 (f00dcafe): tunecli 0.0.9 (driver: 0.1.0), llvmlite 0.44.0 (driver: 0.45.0)"]


def test_the_resource_names_the_targets_cpu_or_this_machines() -> None:
    assert default_resource(Target("llvm -mcpu=znver4")) == "tunecli-cpu-znver4"
    assert wanted_cpu(Target("llvm")) == host_cpu()
    assert default_resource(Target("llvm")) == f"tunecli-cpu-{host_cpu()}"


def timing(node_id: str, threads: int, features: str) -> NodeInfo:
    return NodeInfo(node_id, f"10.0.0.{len(node_id)}", "znver4", features, 8, DRIVER, threads)


def test_nodes_timing_with_other_threads_or_cpu_features_are_told_apart() -> None:
    full = "+avx,+avx512f"
    nodes = [timing("a", 8, full), timing("bb", 8, full), timing("ccc", 64, full),
             timing("dddd", 8, "+avx,-avx512f")]
    assert unlike_nodes(nodes, Target("llvm")) == {  # the most numerous kind is kept
        "ccc": "64 threads, not 8", "dddd": "CPU features -avx512f (lacking +avx512f)"}
    # features fixed by the target (-mcpu or -mattr) are the same everywhere: only threads count
    assert unlike_nodes(nodes, Target("llvm -mcpu=znver4")) == {"ccc": "64 threads, not 8"}
    assert unlike_nodes(nodes[:2], Target("llvm")) == {}


def test_the_nodes_that_time_as_this_machine_are_kept_when_there_are_some() -> None:
    here = timing("a", get_num_threads(), host_features())
    other = [timing(name, get_num_threads() + 1, host_features()) for name in ("bb", "ccc")]
    assert set(unlike_nodes([*other, here], Target("llvm"))) == {"bb", "ccc"}
