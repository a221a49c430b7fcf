"""What a node of the cluster is: its CPU and the versions of the software that builds and times
kernels there, compared with the driver's before anything is measured."""

from __future__ import annotations

import os
import platform
from dataclasses import dataclass
from importlib import metadata

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
    """

    node_id: str
    address: str
    cpu: str
    features: str
    cores: int
    versions: tuple[tuple[str, str], ...]


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
                    host_features(), len(os.sched_getaffinity(0)), software_versions())


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
