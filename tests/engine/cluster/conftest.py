"""A real Ray cluster on 127.0.0.1 for the cluster tests: a head, and a second node for the tests
that need two (each test that kills a node adds its own).  Skipped with the reason where Ray
cannot start."""

from __future__ import annotations

import subprocess
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from tunecli.engine.cluster.local_cluster import LocalRayCluster
from tunecli.engine.cluster.node_info import default_resource
from tunecli.engine.target import Target
from tunecli.errors import TuneError

#: The custom resource of this machine's CPU, which every test node advertises.
RESOURCE = default_resource(Target("llvm"))
#: A resource only the head advertises (a cluster of one worker for the tests that need one).
HEAD_ONLY = "tunecli-test-head"


@pytest.fixture(scope="session")
def ray_head() -> Iterator[LocalRayCluster]:
    """A Ray cluster of one node (the head) offering this machine's CPU resource."""
    pytest.importorskip("ray", reason="Ray is not installed (extra tunecli[ray])")
    cluster = LocalRayCluster({RESOURCE: 1, HEAD_ONLY: 1})
    try:
        cluster.start(workers=0)
    except (TuneError, OSError) as err:
        pytest.skip(f"a Ray head cannot start on this machine: {err}")
    yield cluster
    cluster.stop()


@pytest.fixture(scope="session")
def ray_cluster(ray_head: LocalRayCluster) -> LocalRayCluster:
    """The head and a second node, both offering this machine's CPU resource."""
    alive = [node for node in ray_head.nodes if node.pid not in ray_head.killed]
    if len(alive) < 2:  # the nodes other tests added may have been killed
        ray_head.add_node("node1", {RESOURCE: 1})
        try:
            ray_head.wait_nodes(len(alive) + 1)
        except TuneError as err:
            pytest.skip(f"a second Ray node cannot join: {err}")
    return ray_head


class KillNode:
    """A tune's ``on_event`` callback that kills ``node`` of ``cluster`` (as a lost machine) at the
    measurement where ``when(event, measurements so far)`` first holds."""

    def __init__(self, cluster: LocalRayCluster, node: subprocess.Popen,
                 when: Callable[[Any, int], bool] = lambda _event, seen: seen == 1) -> None:
        self.cluster, self.node, self.when = cluster, node, when
        self.seen = 0
        self.killed = threading.Event()

    def __call__(self, event: Any) -> None:
        if getattr(event, "kind", "") != "batch" or self.killed.is_set():
            return
        self.seen += 1
        if self.when(event, self.seen):
            self.killed.set()
            self.cluster.kill_node(self.node)
