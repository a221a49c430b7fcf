"""The graph tuner's solvers: DP is exact (checked against trying every combination), PBQP equals
DP where its reductions are exact (chains, trees, residual blocks), the problem's arithmetic."""

from __future__ import annotations

import numpy as np
import pytest

from tunecli import relay
from tunecli.engine.graph_tuner.conv_graph import conv_graph, main_function
from tunecli.engine.graph_tuner.dp_solver import solve_dp
from tunecli.engine.graph_tuner.layout_cost import LayoutCostProblem
from tunecli.engine.graph_tuner.pbqp_solver import solve_pbqp
from tunecli.errors import TuneError


def random_problem(rng: np.random.Generator, sizes: list[int],
                   pairs: list[tuple[int, int]]) -> LayoutCostProblem:
    nodes = [rng.random(s) for s in sizes]
    return LayoutCostProblem.create(nodes, [(u, v, rng.random((sizes[u], sizes[v]))) for u, v in pairs])


def residual_pairs(blocks: int) -> list[tuple[int, int]]:
    """ResNet's shape: per block conv a -> conv b, the block input also feeds the merge that
    follows b (b's output layout), and the next block reads b."""
    pairs, prev = [], 0
    for k in range(blocks):
        a, b = 2 * k + 1, 2 * k + 2
        pairs += [(prev, a), (a, b), (prev, b)]
        prev = b
    return pairs


def test_total_sums_chosen_kernel_and_edge_costs() -> None:
    p = LayoutCostProblem.create([[1.0, 2.0], [10.0, 20.0, 30.0]], [(0, 1, [[0, 5, 6], [7, 0, 8]])])
    assert p.total((0, 0)) == 11.0
    assert p.total((1, 2)) == 40.0
    assert p.total((0, 1)) == 26.0


def test_edges_between_the_same_nodes_are_summed_in_either_orientation() -> None:
    p = LayoutCostProblem.create([[0, 0], [0, 0, 0]], [(0, 1, np.ones((2, 3))), (1, 0, 2 * np.ones((3, 2)))])
    assert list(p.edge_costs) == [(0, 1)]
    assert np.array_equal(p.edge_costs[0, 1], 3 * np.ones((2, 3)))


def test_bad_problems_are_rejected() -> None:
    with pytest.raises(TuneError, match="at least one candidate"):
        LayoutCostProblem.create([[1.0], []], [])
    with pytest.raises(TuneError, match=r"edge \(0, 1\) has a \(2, 2\) matrix"):
        LayoutCostProblem.create([[1.0], [1.0]], [(0, 1, np.zeros((2, 2)))])
    with pytest.raises(TuneError, match="itself"):
        LayoutCostProblem.create([[1.0]], [(0, 0, np.zeros((1, 1)))])


@pytest.mark.parametrize("seed", range(40))
def test_dp_equals_brute_force_on_random_dags(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 7))
    sizes = [int(s) for s in rng.integers(1, 4, n)]
    pairs = [(u, v) for v in range(n) for u in range(v) if rng.random() < 0.5]
    p = random_problem(rng, sizes, pairs)
    assert p.total(solve_dp(p)) == pytest.approx(p.total(p.brute_force()))


def test_dp_beats_choosing_each_kernel_alone() -> None:
    # The fastest kernels disagree on layouts; the transform between them costs more than the gain.
    p = LayoutCostProblem.create([[1.0, 2.0], [1.0, 2.0]], [(0, 1, [[10.0, 0.0], [0.0, 10.0]])])
    assert solve_dp(p) in {(0, 1), (1, 0)}
    assert p.total(solve_dp(p)) == 3.0


def test_dp_stops_at_max_num_states() -> None:
    rng = np.random.default_rng(0)
    p = random_problem(rng, [3] * 5, residual_pairs(2))
    solve_dp(p, max_num_states=10_000)
    with pytest.raises(TuneError, match="Too many states"):
        solve_dp(p, max_num_states=20)


@pytest.mark.parametrize("seed", range(15))
@pytest.mark.parametrize("shape", ["chain", "tree", "residual"])
def test_pbqp_equals_dp_where_its_reductions_are_exact(seed: int, shape: str) -> None:
    rng = np.random.default_rng(seed)
    if shape == "chain":
        n = 6
        pairs = [(v - 1, v) for v in range(1, n)]
    elif shape == "tree":
        n = 7
        pairs = [(int(rng.integers(0, v)), v) for v in range(1, n)]
    else:
        n, pairs = 7, residual_pairs(3)
    p = random_problem(rng, [int(s) for s in rng.integers(1, 5, n)], pairs)
    dp = solve_dp(p)
    assert p.total(dp) == pytest.approx(p.total(p.brute_force()))
    assert p.total(solve_pbqp(p)) == pytest.approx(p.total(dp))


def test_pbqp_gives_a_choice_on_dense_graphs() -> None:
    rng = np.random.default_rng(3)
    n = 6
    p = random_problem(rng, [3] * n, [(u, v) for v in range(n) for u in range(v)])  # every degree is 5: RN
    choice = solve_pbqp(p)
    assert len(choice) == n and all(0 <= c < 3 for c in choice)
    assert p.total(choice) >= p.total(solve_dp(p)) - 1e-12


@pytest.fixture(scope="module")
def resnet18_edges() -> tuple[int, list[tuple[int, int]]]:
    mod, _ = relay.testing.resnet.get_workload(num_layers=18, batch_size=1, image_shape=(3, 32, 32))
    graph = conv_graph(main_function(mod), ["data"], ["nn.conv2d"], "llvm")
    return len(graph.nodes), [(e.src, e.dst) for e in graph.edges]


@pytest.mark.parametrize("seed", range(3))
def test_pbqp_equals_dp_on_resnet18s_conv_graph(seed: int, resnet18_edges: tuple) -> None:
    n, pairs = resnet18_edges
    rng = np.random.default_rng(seed)
    p = random_problem(rng, [int(s) for s in rng.integers(2, 6, n)], pairs)
    dp = solve_dp(p, max_num_states=100_000)
    assert p.total(solve_pbqp(p)) == pytest.approx(p.total(dp))
    # Nothing cheaper by changing any one convolution's candidate.
    for v in range(p.size):
        for c in range(p.node_costs[v].size):
            assert p.total(dp[:v] + (c,) + dp[v + 1:]) >= p.total(dp) - 1e-12
