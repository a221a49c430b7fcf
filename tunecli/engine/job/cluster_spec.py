"""The ``cluster`` section of a job: build and time its configs on a cluster's nodes.

::

    cluster:
      kind: ray                          # a registered cluster kind (runner_kinds.CLUSTERS)
      address: auto                      # auto | ray://HOST:10001 | HOST:6379
      resources: {tunecli-cpu-znver4: 1} # what one measuring worker needs of a node
                                         # (default: tunecli-cpu-<the target's CPU>: 1)

The timing settings of ``measure.runner`` (its kind stays ``local``) apply on every node, and
``measure.builder.n_parallel`` is the configs each node builds at once (default: its cores).
``tunecli tune --cluster ADDRESS`` gives or replaces the address.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace

from tunecli.engine.cluster.node_info import wanted_cpu
from tunecli.engine.job.nodes import Node
from tunecli.engine.job.runner_kinds import CLUSTERS
from tunecli.engine.target import Target, host_cpu


@dataclass(frozen=True)
class ClusterSpec:
    """The ``cluster`` section.

    Attributes
    ----------
    kind : str
        A registered cluster kind (:data:`tunecli.engine.job.runner_kinds.CLUSTERS`).
    address : str
        Where the cluster's head is.
    resources : dict
        What one measuring worker needs of a node (empty: the kind's default for the target).
    """

    kind: str = "ray"
    address: str = "auto"
    resources: dict[str, float] = field(default_factory=dict)


def read_cluster(n: Node) -> ClusterSpec:
    """Read a ``cluster`` section; each bad field is reported naming its line."""
    raw = n.items()
    kind = CLUSTERS[raw["kind"].as_choice(tuple(CLUSTERS)) if "kind" in raw else "ray"]
    fields = n.items(("kind", "address", "resources"))
    address = "auto"
    if "address" in fields:
        address = n.problems.collect(lambda: _address(fields["address"], kind.check_address), address)
    resources = {}
    if "resources" in fields:
        resources = n.problems.collect(lambda: _resources(fields["resources"]), resources)
    return ClusterSpec(kind.name, address, resources)


def cluster_problems(n: Node, target: Target | None, runner_kind: str | None,
                     graph_tuner: bool = False) -> None:
    """Report what a job with a ``cluster`` section (node ``n``) cannot do."""
    if target is not None and target.is_gpu:
        n.report(f"a cluster measures CPU kernels; {str(target)!r} is a GPU target")
    elif target is not None and graph_tuner and wanted_cpu(target) != host_cpu():
        n.report(f"the graph tuner times layout transforms on this machine, whose CPU is {host_cpu()}, not "
                 f"the target's {wanted_cpu(target)}: tune the kernels on the cluster without graph_tuner, "
                 "then run the graph tuner on a machine of that CPU")
    if runner_kind not in (None, "local"):
        n.report(f"a cluster builds and times on its nodes: measure.runner.kind must be local (its timing "
                 f"settings apply there), got {runner_kind!r}")


def with_address(spec: ClusterSpec | None, address: str | None) -> ClusterSpec | None:
    """``spec`` with ``address`` (a ``--cluster`` option) given or replacing its own.

    Raises
    ------
    ValueError
        When ``address`` is not a cluster address.
    """
    if address is None:
        return spec
    CLUSTERS[spec.kind if spec is not None else "ray"].check_address(address)
    return replace(spec, address=address) if spec is not None else ClusterSpec(address=address)


def _address(n: Node, check: Callable[[str], str]) -> str:
    text = n.as_str()
    try:
        return check(text)
    except ValueError as err:
        raise n.error(str(err)) from None


def _resources(n: Node) -> dict[str, float]:
    entries = n.items()
    if not entries:
        raise n.error("expected at least one resource, e.g. {tunecli-cpu-znver4: 1}")
    return {name: value.as_float(positive=True) for name, value in entries.items()}
