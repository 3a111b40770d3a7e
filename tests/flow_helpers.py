"""Shared checks for throughput results (every solve in the suite goes through these) and the
random small fabrics several suites draw from."""

import itertools
import random

import numpy as np

import fabricopt as fo


def certified(fab, result, traffic=None, exact=True):
    """Re-check a result's certificate on the fabric and return it.

    lower <= upper always; the stored flow re-proves lower (conservation and capacities
    recomputed from the fabric) and the stored lengths re-prove upper (distance bound with one
    Dijkstra per endpoint, no reductions). Exact solves must close the bracket to 1e-6.
    """
    assert result.lower <= result.upper
    check = fo.check_certificate(fab, result, traffic)
    assert check.lower_ok, (check, result.lower)
    assert check.upper_ok, (check, result.upper)
    if exact:
        # "disconnected": a pair has no path, theta 0 exactly (both ends 0)
        assert result.status == "optimal" or (
            result.status == "disconnected" and result.upper == 0), result.message
        assert result.exact
        assert result.upper - result.lower <= 1e-6 * result.upper
        assert result.lower <= result.theta <= result.upper
    return result


def feasible_below_lp(fab, traffic, model, point):
    """Assert ``point`` (flows then theta) is a feasible point of ``model``'s LP, the
    certificate of a lower bound (flow conservation, capacities, nothing negative), and
    never above the LP's optimum."""
    lp = model.lp
    assert np.abs(lp.A_eq @ point - lp.b_eq).max() <= 1e-9 * max(1.0, np.abs(lp.b_eq).max())
    assert (lp.A_ub @ point - lp.b_ub).max() <= 1e-9 * max(1.0, lp.b_ub.max())
    assert point.min() >= 0.0
    exact = fo.max_concurrent_flow(fab, traffic, method="lp", bounds_first=False).theta
    assert point[-1] <= exact * (1 + 1e-9)


def failed_share(fab, rng, share):
    """``fab`` without a ``share`` of its switch-to-switch links (at least one), chosen by
    ``rng``."""
    eps = set(fab.endpoints)
    links = sorted({tuple(sorted((u, v), key=repr)) for u, v in fab.graph.edges()
                    if u not in eps and v not in eps}, key=repr)
    return fab.without_links(rng.sample(links, max(1, int(share * len(links)))))


def random_fabric(seed):
    """One of the families an architect weighs, with its size and damage drawn from ``seed``."""
    rng = random.Random(seed)
    kind = seed % 5
    if kind == 0:  # an oversubscribed, partly filled two-tier Clos
        # radix 8: 8 x 4 = 32 endpoints at 1:1, more when oversubscribed, so every draw fits
        fab = fo.clos(rng.randint(6, 24), radix=8,
                      oversubscription=rng.choice([1.0, 1.5, 2.0, 3.0]))
    elif kind == 1:  # a leaf-spine with bundles
        fab = fo.leaf_spine(rng.randint(2, 5), rng.randint(1, 3), rng.randint(1, 4),
                            links_per_pair=rng.randint(1, 2))
    elif kind == 2:  # small servers with a scale-up part on a rail-optimized network
        fab = fo.cluster(fo.nvswitch_domain(4, 2, 2, 100.0), nodes=rng.randint(2, 5))
    elif kind == 3:  # a fat tree, often failed
        fab = fo.fat_tree(4)
    else:  # a direct network with no hierarchy at all
        fab = fo.jellyfish(rng.choice([6, 8, 10]), 3, rng.randint(1, 2), seed=seed)
    if rng.random() < 0.5:
        fab = failed_share(fab, rng, rng.choice([0.05, 0.1, 0.2]))
    return fab


def random_traffic(fab, seed):
    """All-to-all mostly; a random permutation for every third seed."""
    return fo.permutation(fab, seed=seed) if seed % 3 == 2 else fo.all_to_all(fab)


def least_bisection_cut(fab):
    """The least cut over every balanced endpoint split (the first endpoint in A; with an odd
    count the larger half may be either side), each with its switches placed by an exact
    minimum cut: the bisection by brute force, for at most a dozen endpoints."""
    from fabricopt.analysis.bisection import _best_cut
    from fabricopt.graph_arrays import GraphArrays

    ga = GraphArrays.from_fabric(fab)
    ep_idx = np.array([ga.index[e] for e in fab.endpoints])
    n = len(ep_idx)
    best = np.inf
    for rest in itertools.combinations(range(1, n), n // 2 - 1):
        mask = np.zeros(n, dtype=bool)
        mask[[0, *rest]] = True
        best = min(best, _best_cut(ga, ep_idx, mask)[0].capacity)
        if n % 2:
            best = min(best, _best_cut(ga, ep_idx, ~mask)[0].capacity)
    return best
