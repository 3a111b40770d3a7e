"""Properties that hold on every fabric, checked on random small ones (hypothesis).

No closed forms here: every assertion is an inequality, an equality between two independent
computations, or a certificate re-checked on the fabric. Sizes stay small so that the whole
module runs in well under a minute.
"""

import math

import networkx as nx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import fabricopt as fo

SETTINGS = settings(max_examples=15, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])
RTOL = 1e-6


@st.composite
def small_fabrics(draw):
    """A small fabric of one of the families, or a random connected graph with random
    capacities (no symmetry there)."""
    kind = draw(st.sampled_from(["ring", "torus", "hypercube", "complete", "leaf_spine",
                                 "fat_tree", "jellyfish", "random"]))
    if kind == "ring":
        return fo.ring(draw(st.integers(3, 9)))
    if kind == "torus":
        return fo.torus((draw(st.integers(2, 4)), draw(st.integers(2, 4))))
    if kind == "hypercube":
        return fo.hypercube(draw(st.integers(1, 3)))
    if kind == "complete":
        return fo.complete(draw(st.integers(2, 6)))
    if kind == "leaf_spine":
        return fo.leaf_spine(leaves=draw(st.integers(2, 4)), spines=draw(st.integers(1, 3)),
                             endpoints_per_leaf=draw(st.integers(1, 3)), link_gbps=100)
    if kind == "fat_tree":
        return fo.fat_tree(4, link_gbps=1.0)
    if kind == "jellyfish":
        return fo.jellyfish(switches=8, network_ports=3, endpoints_per_switch=1,
                            seed=draw(st.integers(0, 50)), link_gbps=1.0)
    n = draw(st.integers(4, 8))
    seed = draw(st.integers(0, 10_000))
    g = nx.connected_watts_strogatz_graph(n, 2, 0.5, seed=seed)
    caps = draw(st.lists(st.sampled_from([1.0, 2.0, 5.0]), min_size=g.number_of_edges(),
                         max_size=g.number_of_edges()))
    for (u, v), c in zip(g.edges, caps, strict=True):
        g[u][v]["capacity"] = c
    return fo.from_networkx(g)


@st.composite
def fabric_and_traffic(draw):
    fab = draw(small_fabrics())
    kind = draw(st.sampled_from(["all-to-all", "permutation", "sparse"]))
    if kind == "all-to-all" or len(fab.endpoints) < 3:
        return fab, fo.all_to_all(fab)
    if kind == "permutation":
        return fab, fo.permutation(fab, seed=draw(st.integers(0, 100)))
    eps = fab.endpoints
    pairs = draw(st.lists(st.tuples(st.sampled_from(eps), st.sampled_from(eps)),
                          min_size=1, max_size=6))
    demands = {(s, t): float(draw(st.integers(1, 4))) for s, t in pairs if s != t}
    if not demands:
        return fab, fo.all_to_all(fab)
    return fab, fo.Traffic(demands)


@SETTINGS
@given(fabric_and_traffic())
def test_bracket_holds_and_rechecks(case):
    fab, traffic = case
    r = fo.max_concurrent_flow(fab, traffic)
    assert r.lower <= r.upper * (1 + 1e-9)
    check = fo.check_certificate(fab, r, traffic)
    assert check.ok, (check, r.lower, r.upper)
    assert r.status == "optimal" and r.exact


@SETTINGS
@given(fabric_and_traffic())
def test_backends_agree(case):
    # HiGHS through scipy and HiGHS directly are two solves of the same LP: both exact, equal.
    fab, traffic = case
    a = fo.max_concurrent_flow(fab, traffic, method="lp")
    b = fo.max_concurrent_flow(fab, traffic, method="lp", backend="highspy")
    assert a.theta == pytest.approx(b.theta, rel=RTOL)


@SETTINGS
@given(small_fabrics(), st.integers(0, 1000))
def test_removing_a_link_never_raises_theta(fab, seed):
    # Every flow of the smaller fabric is a flow of the larger one.
    links = sorted({tuple(sorted((str(u), str(v)))) for u, v in fab.graph.edges})
    name_of = {str(v): v for v in fab.graph}
    u, v = links[seed % len(links)]
    smaller = fab.without(links=[(name_of[u], name_of[v])])
    traffic = fo.all_to_all(fab)
    before = fo.max_concurrent_flow(fab, traffic, method="lp")
    after = fo.max_concurrent_flow(smaller, traffic, method="lp")
    assert after.upper <= before.lower * (1 + 1e-7) + 1e-12


@SETTINGS
@given(small_fabrics(), st.sampled_from(["json", "graphml"]))
def test_round_trip_changes_no_answer_and_no_cost(tmp_path_factory, fab, fmt):
    path = tmp_path_factory.mktemp("trip") / f"fabric.{fmt}"
    write = fo.write_json if fmt == "json" else fo.write_graphml
    read = fo.read_json if fmt == "json" else fo.read_graphml
    write(fab, path)
    back = read(path)
    assert back.graph.number_of_edges() == fab.graph.number_of_edges()
    theta = fo.max_concurrent_flow(fab).theta
    assert fo.max_concurrent_flow(back).theta == pytest.approx(theta, rel=RTOL)
    b1, b2 = fo.bisection_bandwidth(fab), fo.bisection_bandwidth(back)
    assert (b2.lower_gbps, b2.upper_gbps) == pytest.approx((b1.lower_gbps, b1.upper_gbps),
                                                           rel=RTOL)
    try:
        cost = fo.estimate_cost(fab)
    except fo.FabricOptError:
        return  # a family the catalog has no hardware for (generic unit links)
    again = fo.estimate_cost(back)
    assert (again.capex_usd, again.power_w) == pytest.approx((cost.capex_usd, cost.power_w))


@SETTINGS
@given(small_fabrics())
def test_bisection_bracket_contains_every_balanced_cut_it_reports(fab):
    # The reported cut is a real split of the endpoints whose arcs carry upper_gbps, and the
    # certified lower bound never exceeds it.
    b = fo.bisection_bandwidth(fab)
    assert b.lower_gbps <= b.upper_gbps * (1 + 1e-9)
    crossing = sum(fab.graph[u][v]["capacity"] for u, v in b.cut.links)
    assert crossing == pytest.approx(b.upper_gbps, rel=1e-9)
    assert abs(len(b.cut.endpoints_a) - len(b.cut.endpoints_b)) <= 1
    assert math.isfinite(b.lower_gbps)
