"""Alternative tasks: tasks that implement one operator, of which the build runs only the fastest.

A network's convolution may have a direct and a Winograd task; ``relay.build`` runs, per call,
the one with the lower tuned latency.  The operator therefore costs the minimum of its tasks'
latencies, not their sum.  Alternatives are given as disjoint groups of task indices; a task in
no group is a group of its own.

Each task has a weight ``w_i`` (the calls that may run it).  Within a group the ``s = min(w_i)``
calls of the operator run its fastest member, and the remaining ``w_i - s`` calls of a member are
calls only it can run (a job's listed task of the same workload).  The weighted latency is

    f = sum over groups G of  s_G * min(g_i, i in G)  +  sum over i in G of (w_i - s_G) * g_i

which is ``sum(w_i * g_i)`` when every group has one task.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from tunecli.errors import TuneError


def operator_groups(n_tasks: int, alternatives: Sequence[Sequence[int]] = ()) -> list[tuple[int, ...]]:
    """Every task in exactly one group: the groups of ``alternatives``, then each other task alone.

    Parameters
    ----------
    n_tasks : int
    alternatives : sequence of sequence of int
        Disjoint groups of task indices (in ``range(n_tasks)``).

    Returns
    -------
    list of tuple of int

    Raises
    ------
    TuneError
        For an index out of range, an empty group or a task in two groups.
    """
    groups: list[tuple[int, ...]] = []
    seen: set[int] = set()
    for group in alternatives:
        members = tuple(int(i) for i in group)
        if not members or any(not 0 <= i < n_tasks for i in members):
            raise TuneError(f"alternatives: {list(members)} is not a group of task indices 0..{n_tasks - 1}")
        if seen & set(members) or len(set(members)) < len(members):
            raise TuneError(f"alternatives: a task of {list(members)} is in more than one group")
        seen.update(members)
        groups.append(members)
    return groups + [(i,) for i in range(n_tasks) if i not in seen]


def weighted_latency(latencies: Sequence[float], weights: Sequence[float],
                     groups: Sequence[Sequence[int]]) -> float:
    """The weighted latency ``f`` of the module docstring (inf while a group has no finite latency).

    Parameters
    ----------
    latencies : sequence of float
        Each task's best latency (``inf`` when unknown).
    weights : sequence of float
    groups : sequence of sequence of int
        As :func:`operator_groups` returns them.

    Returns
    -------
    float
    """
    total = 0.0
    for group in groups:
        shared = min(weights[i] for i in group)
        total += shared * min(latencies[i] for i in group)
        total += sum((weights[i] - shared) * latencies[i] for i in group if weights[i] > shared)
    return total


def latency_change(latencies: Sequence[float], weights: Sequence[float], groups: Sequence[Sequence[int]],
                   index: int, delta: float) -> float:
    """How much ``f`` changes when task ``index``'s latency changes by ``delta`` (<= 0).

    The shared part of its group only gains once the task beats the group's fastest other member:
    ``s * (min(g + delta, m) - min(g, m))``, ``m`` the others' minimum; its own calls gain
    ``(w - s) * delta``.  A task alone gains ``w * delta``.

    Parameters
    ----------
    latencies, weights, groups
        As :func:`weighted_latency` takes them.
    index : int
    delta : float

    Returns
    -------
    float
    """
    group = next(g for g in groups if index in g)
    g, w = latencies[index], weights[index]
    shared = min(weights[i] for i in group)
    others = min((latencies[i] for i in group if i != index), default=math.inf)
    gain = min(delta, others - g) if g <= others else min(g + delta - others, 0.0)
    return shared * gain + (w - shared) * delta
