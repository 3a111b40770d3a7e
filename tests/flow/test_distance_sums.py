"""The reduced sum of endpoint distances (pendant endpoints searched from their switch,
zero-length components contracted, rows in batches) against one search per endpoint over the
whole graph, the distance bound as stated in docs/throughput.md."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.sparse.csgraph import dijkstra

import fabricopt as fo
from fabricopt.flow import distance_sums
from fabricopt.flow.distance_sums import demand_distance
from fabricopt.graph_arrays import GraphArrays


def _by_hand(ga: GraphArrays, lengths: np.ndarray, traffic: fo.Traffic) -> float:
    """Every endpoint's own search and the full endpoint-by-endpoint matrix."""
    idx = np.array([ga.index[e] for e in traffic.endpoints])
    dist = dijkstra(ga.matrix(lengths), directed=True, indices=idx)[:, idx]
    pos = {e: i for i, e in enumerate(traffic.endpoints)}
    return sum(g * dist[pos[s], pos[t]] for (s, t), g in traffic.items())


FABRICS = [fo.ring(5), fo.fat_tree(4), fo.leaf_spine(4, 2, 3),
           fo.cluster(fo.nvswitch_domain(4, 2, 2, 100.0), nodes=3),
           fo.jellyfish(10, 3, 2, seed=2)]


@pytest.mark.parametrize("fab", FABRICS, ids=lambda f: f.name)
@pytest.mark.parametrize("zeros", [0.0, 0.7])
def test_reduced_sum_equals_every_endpoints_own_search(fab, zeros, monkeypatch):
    # A tiny batch budget makes several batches of searches even on these fabrics.
    monkeypatch.setattr(distance_sums, "ROW_BUDGET", 20)
    ga = GraphArrays.from_fabric(fab)
    rng = np.random.default_rng(len(ga.nodes))
    lengths = rng.uniform(0.1, 2.0, ga.n_arcs) * (rng.random(ga.n_arcs) >= zeros)
    for traffic in (fo.all_to_all(fab, gbps=1.5), fo.permutation(fab, seed=3)):
        assert demand_distance(ga, lengths, traffic) == pytest.approx(
            _by_hand(ga, lengths, traffic), rel=1e-12)


def test_cut_lengths_contract_the_switches():
    # Length one on the endpoint links only (the endpoint cut's lengths): every switch of
    # fat_tree(4) is one zero-length component, and each of the 16 * 15 ordered pairs is
    # 2 apart (up and down), 480 in all.
    fab = fo.fat_tree(4)
    ga = GraphArrays.from_fabric(fab)
    endpoint = set(fab.endpoints)
    lengths = np.array([float(u in endpoint or v in endpoint) for u, v in ga.arcs])
    assert demand_distance(ga, lengths, fo.all_to_all(fab)) == 480.0


def test_a_disconnected_pair_sums_to_infinity():
    fab = fo.ring(4)
    cut = fab.without([("n0", "n1"), ("n2", "n3")])  # two halves
    ga = GraphArrays.from_fabric(cut)
    assert demand_distance(ga, np.ones(ga.n_arcs), fo.all_to_all(cut)) == np.inf
