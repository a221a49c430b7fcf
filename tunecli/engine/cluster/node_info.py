"""What a node of the cluster is: its CPU and the versions of the software that builds and times
kernels there, compared with the driver's before anything is measured."""

from __future__ import annotations

import os
import platform
from dataclasses import dataclass
from importlib import metadata

from tunecli.engine.runtime.threads import get_num_threads
from tunecli.engine.target import Target, host_cpu, host_features

#: The packages whose versions must agree between the driver and every node: the records a
#: node sends back describe configs of the driver's templates, compiled by the node's LLVM.
CHECKED_PACKAGES = ("tunecli", "llvmlite")


@dataclass(frozen=True)
class NodeInfo:
    """One node, as a task running on it sees it.

    Attributes
    ----------
    node_id : str
        Ray's id of the node.
    address : str
        The node's IP address.
    cpu : str
        LLVM's name of the node's CPU.
    features : str
        The node's CPU features (LLVM feature string).
    cores : int
        CPUs this process may use there.
    versions : tuple of (name, version)
        ``python`` and each of :data:`CHECKED_PACKAGES`.
    threads : int
        Threads the parallel loops of kernels timed there use.
    """

    node_id: str
    address: str
    cpu: str
    features: str
    cores: int
    versions: tuple[tuple[str, str], ...]
    threads: int


def software_versions() -> tuple[tuple[str, str], ...]:
    """``(name, version)`` of Python (major.minor) and of each of :data:`CHECKED_PACKAGES` here."""
    found = [("python", ".".join(platform.python_version_tuple()[:2]))]
    for name in CHECKED_PACKAGES:
        try:
            found.append((name, metadata.version(name)))
        except metadata.PackageNotFoundError:
            found.append((name, "not installed"))
    return tuple(found)


def describe_node() -> NodeInfo:
    """This node (run as a Ray task on it)."""
    import ray

    return NodeInfo(ray.get_runtime_context().get_node_id(), ray.util.get_node_ip_address(), host_cpu(),
                    host_features(), len(os.sched_getaffinity(0)), software_versions(), get_num_threads())


def version_problems(nodes: list[NodeInfo], driver: tuple[tuple[str, str], ...]) -> list[str]:
    """One line per node whose software differs from the driver's (empty: all agree)."""
    wanted = dict(driver)
    problems = []
    for node in nodes:
        differ = [f"{name} {version} (driver: {wanted.get(name, 'none')})" for name, version in node.versions
                  if wanted.get(name) != version]
        if differ:
            problems.append(f"node {node.address} ({node.node_id[:8]}): {', '.join(differ)}")
    return problems


def wanted_cpu(target: Target) -> str:
    """The CPU a node must have to time kernels of ``target``: its ``-mcpu``, else this machine's
    (a target without ``-mcpu`` is compiled for the machine that runs it: the driver's)."""
    return target.mcpu or host_cpu()


def default_resource(target: Target) -> str:
    """The custom Ray resource that marks the nodes of ``target``'s CPU: ``tunecli-cpu-<cpu>``."""
    return f"tunecli-cpu-{wanted_cpu(target)}"


def unlike_nodes(nodes: list[NodeInfo], target: Target) -> dict[str, str]:
    """The nodes (by id) whose timings of ``target``'s kernels would not compare with the others', each
    with how it differs: another thread count, or other CPU features where the target leaves them to
    the machine that compiles (no ``-mcpu``/``-mattr``).  The nodes kept are those timing as this
    machine would, else the most numerous kind (the first one's on a tie)."""
    own_features = not target.mcpu and not target.mattr

    def kind(threads: int, features: str) -> tuple[int, frozenset[str]]:
        return threads, frozenset(features.split(",")) if own_features else frozenset()

    kinds = [kind(node.threads, node.features) for node in nodes]
    if len(set(kinds)) < 2:
        return {}
    here = kind(get_num_threads(), host_features())
    kept = here if here in kinds else max(kinds, key=kinds.count)  # max keeps the first of equal counts
    threads, features = kept
    unlike = {}
    for node, (node_threads, node_features) in zip(nodes, kinds, strict=True):
        differ = []
        if node_threads != threads:
            differ.append(f"{node_threads} threads, not {threads}")
        if node_features != features:
            differ.append(f"CPU features {','.join(sorted(node_features - features)) or 'fewer'} "
                          f"(lacking {','.join(sorted(features - node_features)) or 'none'})")
        if differ:
            unlike[node.node_id] = ", ".join(differ)
    return unlike
