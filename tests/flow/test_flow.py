"""Max-concurrent-flow: the closed forms of docs/throughput.md through every backend, the
symmetric method against the full LP, certificates, statuses and errors."""

import math

import networkx as nx
import numpy as np
import pytest
from flow_helpers import certified

import fabricopt as fo
from fabricopt.flow import plan as api

BACKENDS = [("highs", {}), ("highspy", {"solver": "simplex"}), ("highspy", {"solver": "ipm"}),
            ("pulp", {})]
METHODS = ["lp", "symmetric"]

# (fabric, closed form) with unit capacities and unit all-to-all, derived in
# docs/throughput.md#closed-form-test-cases:
# K_n: 1 (direct links); ring C_n, n even: 8/n^2 (cut and distance bounds meet);
# hypercube Q_d: 2^(1-d) (McDiarmid, Scott, Withers); k x k torus, k even: 8/k^3.
PUBLIC_CASES = [
    ("complete(5)", lambda: fo.complete(5), 1.0),
    ("ring(6)", lambda: fo.ring(6), 8 / 6**2),
    ("ring(8)", lambda: fo.ring(8), 8 / 8**2),
    ("hypercube(3)", lambda: fo.hypercube(3), 2.0 ** (1 - 3)),
    ("hypercube(4)", lambda: fo.hypercube(4), 2.0 ** (1 - 4)),
    ("torus(4,4)", lambda: fo.torus((4, 4)), 8 / 4**3),
]


@pytest.mark.parametrize("backend, options", BACKENDS, ids=lambda x: str(x))
@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("name, make, expected", PUBLIC_CASES, ids=[c[0] for c in PUBLIC_CASES])
def test_public_cases_every_backend(name, make, expected, method, backend, options):
    fab = make()
    r = fo.max_concurrent_flow(fab, method=method, backend=backend, **options)
    certified(fab, r)
    assert r.theta == pytest.approx(expected, rel=1e-6)
    assert r.method == method and r.backend == backend


@pytest.mark.parametrize("d", [2, 3, 4])
def test_hypercube_antipodal_permutation_is_one(d):
    # docs/throughput.md: the antipodal permutation of Q_d routes at theta = 1 (d edge-disjoint
    # shortest paths of length d per pair, each arc used by exactly one pair per direction).
    fab = fo.hypercube(d)
    n = 2**d
    tm = fo.Traffic({(f"n{i}", f"n{(n - 1) ^ i}"): 1.0 for i in range(n)})
    r = certified(fab, fo.max_concurrent_flow(fab, tm), tm)
    # Not invariant traffic, so not the symmetric method: the bounds stage closes it (a
    # node's own link carries its one demand, and fewest-hop ECMP routes it disjointly).
    assert r.theta == pytest.approx(1.0) and r.method in ("lp", "bounds")


def test_pdlp_gives_a_certified_bracket():
    # A first-order solver stops at a tolerance: whatever status it earns, the bracket must
    # hold the true value 8/4^3 = 0.125 and be re-provable.
    fab = fo.torus((4, 4))
    for method in METHODS:
        r = fo.max_concurrent_flow(fab, method=method, backend="highspy", solver="pdlp")
        certified(fab, r, exact=False)
        assert r.lower <= 0.125 * (1 + 1e-12) and r.upper >= 0.125 * (1 - 1e-12)
        assert r.upper - r.lower <= 1e-4 * r.upper
        assert r.status in ("optimal", "inexact")


def test_symmetric_equals_full_lp_on_classic_families():
    fabrics = [fo.ring(5), fo.ring(7), fo.torus((3, 4)), fo.torus((2, 3, 3)), fo.hypercube(2),
               fo.complete(4), fo.dragonfly(a=2, h=1, p=1, link_gbps=1.0)]
    for fab in fabrics:
        sym = certified(fab, fo.max_concurrent_flow(fab, method="symmetric"))
        full = certified(fab, fo.max_concurrent_flow(fab, method="lp"))
        assert sym.theta == pytest.approx(full.theta, rel=1e-7), fab.name


def test_reduced_symmetric_lp_is_small_and_unreduced_agrees():
    fab = fo.torus((6, 6))
    model = fo.flow.build_symmetric_lp(fab, 1.0)
    plain = fo.flow.build_symmetric_lp(fab, 1.0, reduce=False)
    assert model.reduced and not plain.reduced
    # Colour refinement from a root of the 6x6 torus: the root's stabiliser (reflections and
    # the swap of the two dimensions, 8 elements) splits the 144 arcs into far fewer classes
    # than the 144 columns (+ theta) of the unreduced LP.
    assert plain.lp.n_cols == 145
    assert model.lp.n_cols < 145 / 4
    a = fo.flow.solve_lp(model.lp)
    b = fo.flow.solve_lp(plain.lp)
    assert -a.objective == pytest.approx(-b.objective, rel=1e-9)
    assert -a.objective == pytest.approx(8 / 6**3, rel=1e-9)  # docs/throughput.md torus, k = 6


def test_result_fields_and_loads():
    fab = fo.ring(8)
    r = fo.max_concurrent_flow(fab)
    # All-to-all at 1 Gb/s: each node sends 7 Gb/s, so per endpoint theta * 7.
    assert r.per_endpoint_gbps == pytest.approx(0.125 * 7)
    # A ring at theta*: every arc is saturated (cut and distance bounds meet).
    assert all(u == pytest.approx(1.0) for u in r.utilization.values())
    assert set(r.link_load) == set(fab.graph.edges)
    assert len(r.bottlenecks) == 16  # all 8 links x 2 directions bind
    assert r.binding_tier == "ring" and r.tiers["ring"].max_utilization == pytest.approx(1.0)
    assert "theta" in str(r) and "binding tier" in str(r)
    # Each end's stage is printed: the ring's claim makes it one symmetric LP.
    assert r.stages == {"lower": "symmetric LP", "upper": "symmetric LP"}
    assert "proven           lower by symmetric LP, upper by symmetric LP" in str(r)


def test_auto_picks_symmetric_then_lp():
    fab = fo.torus((3, 3))
    assert fo.max_concurrent_flow(fab).method == "symmetric"
    assert fo.max_concurrent_flow(fab, fo.permutation(fab, seed=1)).method == "lp"
    edited = fab.without_links([("n0.0", "n0.1")])
    r = certified(edited, fo.max_concurrent_flow(edited))
    assert r.method == "lp"


def test_symmetric_refused_where_it_would_be_wrong():
    fab = fo.torus((3, 3))
    with pytest.raises(fo.InvalidParameterError, match="not uniform"):
        fo.max_concurrent_flow(fab, fo.permutation(fab, seed=0), method="symmetric")
    with pytest.raises(fo.InvalidParameterError, match="every endpoint"):
        fo.max_concurrent_flow(fab, fo.all_to_all(fab, endpoints=["n0.0", "n1.1"]),
                               method="symmetric")
    # An edited fabric loses its claim; "symmetric" then finds the group it still has (one
    # root flow per orbit on the endpoints), which is exact: it equals the full LP.
    for other in (fab.without_links([("n0.0", "n0.1")]), fo.jellyfish(8, 3, 1, seed=1)):
        sym = fo.max_concurrent_flow(other, method="symmetric")
        assert sym.exact and sym.certificate.symmetry is not None
        assert sym.theta == pytest.approx(fo.max_concurrent_flow(other, method="lp").theta,
                                          rel=1e-7)


def test_jellyfish_exact_within_cut_and_distance_bounds():
    fab = fo.jellyfish(switches=10, network_ports=3, endpoints_per_switch=2, seed=3,
                       link_gbps=1.0)
    r = certified(fab, fo.max_concurrent_flow(fab))
    # docs/throughput.md: random graphs are tested by inequalities only. Hop-distance bound (l = 1):
    hop = fo.flow.proof.explicit_distance_bound(fab, fo.all_to_all(fab),
                                                np.ones(fab.graph.number_of_edges()))
    assert r.theta <= hop * (1 + 1e-9)
    # Cut bound of each single endpoint: it sends 19 Gb/s through a 1 Gb/s link.
    assert r.theta <= 1 / 19 + 1e-12


def test_disconnected_pair_gives_zero_with_a_cut():
    G = nx.Graph()
    nx.add_path(G, ["a", "b", "c"])
    nx.add_path(G, ["x", "y"])
    fab = fo.from_networkx(G)
    r = fo.max_concurrent_flow(fab)
    assert r.theta == 0.0 and r.lower == 0.0 and r.upper == 0.0
    s, t = r.unreachable
    assert s in r.cut and t not in r.cut
    # The cut proves it: no arc leaves the set reachable from s.
    assert not any(u in r.cut and v not in r.cut for u, v in fab.graph.edges)
    assert "cannot reach" in str(r)
    # Nothing binds when no path exists: no tier is to blame.
    assert r.binding_tier is None


def test_time_limited_solve_reports_status_and_a_valid_bracket():
    fab = fo.torus((12, 12))
    truth = 8 / 12**3  # docs/throughput.md torus, k = 12
    # Dual simplex checks the clock at every iteration and cannot finish this LP (83k columns)
    # in a millisecond. The interior-point path is not used here: HiGHS hands IPX the time
    # left after presolve, and IPX reads a negative time as "no limit", so a limit shorter
    # than presolve can be ignored there (the backend's docstring says so).
    r = fo.max_concurrent_flow(fab, method="lp", time_limit=1e-3, solver="simplex")
    assert r.status == "time_limit"
    assert r.theta is None
    # The hop-length bound is exact on a torus, so upper equals truth up to rounding.
    assert r.lower <= truth <= r.upper * (1 + 1e-12)
    assert "theta            unknown (not proven)" in str(r)
    # The bandwidth is "unknown" with its proven bracket: 143 Gb/s sent per node (all-to-all
    # at 1 Gb/s among 144 nodes) times the theta bracket, never the lower end alone.
    low, high = r.per_endpoint_gbps_bracket
    assert low == pytest.approx(r.lower * 143) and high == pytest.approx(r.upper * 143)
    assert f"per endpoint     unknown: {low:.6g} to {high:.6g} Gb/s" in str(r)
    # The hop-length lengths behind that upper bound are kept, so the checker re-proves it.
    certified(fab, r, exact=False)


@pytest.mark.parametrize("solver", ["ipm", "simplex"])
def test_highspy_time_limit_holds_even_when_highs_ignores_its_own(monkeypatch, solver):
    # Switch HiGHS's own limit off after fabricopt set it, as happens inside HiGHS when
    # presolve outlasts the limit (IPX is then given a negative time, read as "no limit"):
    # the wall-clock interrupt must still stop the solve and report the status.
    from fabricopt.flow import backends

    set_deadline = backends._deadline_callbacks

    def highs_limit_off(h, time_limit):
        fired = set_deadline(h, time_limit)
        h.setOptionValue("time_limit", 1e9)
        return fired

    monkeypatch.setattr(backends, "_deadline_callbacks", highs_limit_off)
    fab = fo.torus((12, 12))
    truth = 8 / 12**3  # docs/throughput.md torus, k = 12
    r = fo.max_concurrent_flow(fab, method="lp", backend="highspy", solver=solver,
                               time_limit=0.2)
    assert r.status == "time_limit" and r.theta is None
    assert "interrupted" in r.message
    assert r.lower <= truth <= r.upper * (1 + 1e-12)


def test_too_large_for_auto_gives_a_certified_approximate_bracket(monkeypatch):
    monkeypatch.setattr(api, "MAX_AUTO_NONZEROS", 10)
    fab = fo.jellyfish(switches=8, network_ports=3, endpoints_per_switch=1, seed=2,
                       link_gbps=1.0)
    r = fo.max_concurrent_flow(fab, bounds_first=False)
    exact = fo.max_concurrent_flow(fab, method="lp").theta
    assert r.method == "approx" and "certified bracket" in r.message
    assert 0 < r.lower <= exact * (1 + 1e-9) and exact <= r.upper * (1 + 1e-9) < math.inf
    certified(fab, r, exact=False)


def test_a_new_model_plugs_into_the_one_certify_path():
    # A model that follows the ThroughputModel protocol gets both proofs from certify(): here
    # the full LP of a 4-ring wrapped so that it reports its flow as is. Ring C_4, unit
    # capacity and unit all-to-all: theta = 8 / 4**2 = 0.5 (cut and distance bounds meet).
    from fabricopt.flow import LPSolution, certify, solve_lp

    fab = fo.ring(4)
    model = fo.build_flow_lp(fab, fo.all_to_all(fab))
    sol = solve_lp(model.lp)
    cert = certify(model, sol)
    assert cert.lower == pytest.approx(0.5, rel=1e-9)
    assert cert.upper == pytest.approx(0.5, rel=1e-9)
    # Flow conservation of the lifted flow and capacities (cut = flow on the ring).
    assert cert.lifted.residual_l1 <= 1e-9 and cert.max_overload <= 1 + 1e-9
    # Without a point, hop lengths still prove the upper side: every ordered pair of C_4 is
    # 1, 1 or 2 hops away, sum of distances 4 x (1 + 1 + 2) = 16, capacity 8 arcs x 1,
    # so theta <= 8 / 16 = 0.5 and nothing is proven below.
    blind = certify(model, LPSolution("not_solved", "no point"))
    assert blind.lower == 0.0 and blind.upper == pytest.approx(0.5)


def test_endpoint_collapse_keeps_same_switch_pairs_on_their_links():
    # Star: 4 endpoints under one switch, links of 10 Gb/s. All-to-all at 1 Gb/s: each
    # endpoint sends 3 Gb/s through its link, so theta = 10 / 3; every pair is same-switch,
    # so the core LP has no commodity at all.
    G = nx.star_graph(4)
    fab = fo.from_networkx(G, endpoints=[1, 2, 3, 4], default_capacity=10.0)
    r = certified(fab, fo.max_concurrent_flow(fab, method="lp"))
    assert r.theta == pytest.approx(10 / 3)
    assert r.lp_size["commodities"] == 0


def test_build_then_export_then_solve(tmp_path):
    fab = fo.ring(4)
    model = fo.build_flow_lp(fab, fo.all_to_all(fab))
    # 4 sources x 8 arcs flow variables + theta; 4 x 4 conservation rows; 8 capacity rows.
    assert model.lp.n_cols == 33 and model.lp.A_eq.shape == (16, 33)
    assert model.lp.A_ub.shape[0] == 8
    path = tmp_path / "ring.mps"
    fo.export_mps(model.lp, path)
    assert "ROWS" in path.read_text()
    r = fo.solve_flow_model(model)
    assert r.theta == pytest.approx(8 / 4**2)  # docs/throughput.md ring, n = 4


def test_bad_arguments():
    fab = fo.ring(4)
    with pytest.raises(fo.InvalidParameterError, match="method"):
        fo.max_concurrent_flow(fab, method="magic")
    with pytest.raises(fo.InvalidParameterError, match="backend"):
        fo.max_concurrent_flow(fab, backend="cplex")
    with pytest.raises(fo.InvalidParameterError, match="time_limit"):
        fo.max_concurrent_flow(fab, time_limit=0)
    with pytest.raises(fo.InvalidParameterError, match="Fabric"):
        fo.max_concurrent_flow(nx.path_graph(3))
    with pytest.raises(fo.TrafficError, match="not endpoints"):
        fo.max_concurrent_flow(fab, fo.Traffic({("n0", "zz"): 1.0}))


@pytest.mark.parametrize("backend, options", BACKENDS, ids=lambda x: str(x))
@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("k", [4, 6])
def test_fat_tree_all_to_all_fabric_only(k, method, backend, options):
    # docs/throughput.md#fat-tree: k-ary fat-tree, server-level all-to-all with same-switch
    # pairs dropped: theta = 1 / (N - k/2), N = k^3/4 (the edge uplinks bind). Unit capacities.
    if backend == "pulp" and k == 6 and method == "lp":
        pytest.skip("CBC on the 54-host full LP is slow; the other backends cover it")
    fab = fo.fat_tree(k, link_gbps=1.0)
    n = k**3 // 4
    r = fo.max_concurrent_flow(fab, method=method, backend=backend,
                               include_endpoint_links=False, **options)
    certified(fab, r)
    assert r.theta == pytest.approx(1 / (n - k / 2), rel=1e-6)
    # Per endpoint: theta x (N - k/2) Gb/s routed across the fabric = 1 Gb/s.
    assert r.per_endpoint_gbps == pytest.approx(1.0)


def test_fat_tree_all_to_all_with_nic_links():
    # With the host links as constraints each host sends N - 1 through one unit link:
    # theta = 1 / (N - 1) = 1/15 for k = 4, below the fabric-only 1/14.
    fab = fo.fat_tree(4, link_gbps=1.0)
    r = certified(fab, fo.max_concurrent_flow(fab))
    assert r.theta == pytest.approx(1 / 15) and r.binding_tier == "gpu-leaf"


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_fat_tree_any_permutation_is_one(seed):
    # docs/throughput.md#fat-tree: full bisection, so any permutation of servers routes at
    # theta = 1.
    fab = fo.fat_tree(4, link_gbps=1.0)
    tm = fo.permutation(fab, seed=seed)
    r = certified(fab, fo.max_concurrent_flow(fab, tm), tm)
    assert r.theta == pytest.approx(1.0)
    tm = fo.longest_matching(fab)
    assert fo.max_concurrent_flow(fab, tm).theta == pytest.approx(1.0)


@pytest.mark.parametrize("make", [
    lambda: fo.fat_tree(4, link_gbps=100),
    lambda: fo.clos(endpoints=32, radix=8, tiers=2, link_gbps=100),
    lambda: fo.clos(endpoints=24, radix=8, tiers=2, oversubscription=3.0, link_gbps=100),
    lambda: fo.clos(endpoints=64, radix=8, tiers=3, link_gbps=100),
    lambda: fo.leaf_spine(4, 2, 4, link_gbps=100),
    lambda: fo.rail_optimized(nodes=4, gpus_per_node=2, leaf_radix=4, nic_gbps=100),
    lambda: fo.rail_optimized(nodes=4, gpus_per_node=2, leaf_radix=4, planes=2),
    # 12 endpoints, floor(8 x 2 / 3) = 5 down per leaf: ceil(12 / 5) = 3 leaves of 4 (spread
    # evenly), not 5 + 5 + 2.
    lambda: fo.clos(endpoints=12, radix=8, oversubscription=2.0, link_gbps=100),
    # floor(5 x 4 / 5) = 4 down: ceil(6 / 4) = 2 leaves per rail of 3 + 3 servers.
    lambda: fo.rail_optimized(nodes=6, gpus_per_node=2, leaf_radix=5, oversubscription=4.0),
], ids=["fat_tree", "clos2", "clos2-3:1", "clos3", "leaf_spine", "rail", "rail-2planes",
        "clos2-spread", "rail-spread"])
def test_symmetric_equals_full_lp_on_scale_out_families(make):
    fab = make()
    assert fab.symmetry is not None
    sym = certified(fab, fo.max_concurrent_flow(fab, method="symmetric"))
    full = certified(fab, fo.max_concurrent_flow(fab, method="lp"))
    assert sym.theta == pytest.approx(full.theta, rel=1e-7)
    for include in (False,):
        a = fo.max_concurrent_flow(fab, method="symmetric", include_endpoint_links=include)
        b = fo.max_concurrent_flow(fab, method="lp", include_endpoint_links=include)
        assert a.theta == pytest.approx(b.theta, rel=1e-7)


def test_rail_only_has_no_path_between_rails():
    # Rail-only without scale-up: GPUs of different rails cannot reach each other.
    fab = fo.rail_optimized(nodes=4, gpus_per_node=2, leaf_radix=4, spine=False)
    r = fo.max_concurrent_flow(fab)
    assert r.theta == 0.0 and r.unreachable is not None


def test_polish_makes_a_rounded_point_exact():
    # Round an optimal point to 7 significant digits (what some solvers print): the
    # conservation residual jumps; polishing restores it to machine precision on the same
    # support, keeping every variable non-negative.
    from fabricopt.flow.polish import polish, residual

    model = fo.build_flow_lp(fo.ring(6), fo.all_to_all(fo.ring(6)))
    x = fo.flow.solve_lp(model.lp).x
    rounded = np.array([float(f"{v:.7g}") for v in x])
    assert residual(model.lp, rounded) > 1e-9
    fixed = polish(model.lp, rounded)
    assert residual(model.lp, fixed) < 1e-12 and (fixed >= 0).all()


def test_pdlp_is_exact_after_polishing():
    # PDLP stops at a tolerance; polishing on the active set closes the bracket.
    fab = fo.torus((4, 4))
    r = fo.max_concurrent_flow(fab, backend="highspy", solver="pdlp")
    certified(fab, r)
    assert r.theta == pytest.approx(8 / 4**3)  # docs/throughput.md torus


def test_missing_backend_gives_install_hint(monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "highspy", None)  # import highspy now fails
    with pytest.raises(fo.BackendUnavailableError, match="pip install"):
        fo.max_concurrent_flow(fo.ring(4), backend="highspy")


def test_default_simplex_is_exact_on_a_random_fabric():
    # With HiGHS's default 1e-7 feasibility tolerances the simplex point is 3e-7 and its
    # duals 3e-5 from optimal on this jellyfish, so the certified bracket would not close; the
    # backends ask for 1e-10. (No closed form: the certificate is the check.)
    fab = fo.jellyfish(40, 6, 4, seed=1)
    r = fo.max_concurrent_flow(fab, method="lp")
    certified(fab, r)


@pytest.mark.parametrize("capacity", [float("nan"), math.inf, -1.0, 0.0, None, "fast", True])
def test_bad_capacity_is_named_before_any_solve(capacity):
    # Every entry point reads the fabric through the same arrays, which check each arc.
    fab = fo.ring(4)
    fab.graph["n0"]["n1"]["capacity"] = capacity
    calls = [lambda: fo.max_concurrent_flow(fab), lambda: fo.bisection_bandwidth(fab),
             lambda: fo.valiant_rate(fab),
             lambda: fo.collective_bounds(fab, "all_gather", message_bytes=2**20)]
    for call in calls:
        with pytest.raises(fo.InvalidFabricError, match="'n0'->'n1'.*capacity"):
            call()


def test_self_loop_is_refused_by_every_solver():
    fab = fo.ring(4)
    fab.graph.add_edge("n0", "n0", capacity=1.0)
    with pytest.raises(fo.InvalidFabricError, match="self-loop"):
        fo.max_concurrent_flow(fab)


@pytest.mark.parametrize("backend, options, error, words", [
    ("highs", {"solver": 5}, fo.InvalidParameterError, "solver must be"),
    ("highs", {"presolv": False}, fo.InvalidParameterError, "unknown option.*presolv"),
    ("highspy", {"threads": "x"}, fo.InvalidParameterError, "threads"),
    ("highspy", {"no_such_option": 1}, fo.InvalidParameterError, "no_such_option"),
    ("pulp", {"solver": "NOPE"}, fo.InvalidParameterError, "solver must be one of"),
    ("pulp", {"solver": "GUROBI_CMD"}, fo.BackendUnavailableError, "not installed"),
    ("pulp", {"bogus": 1}, fo.InvalidParameterError, "does not take"),
])
def test_backend_options_checked_before_solving(backend, options, error, words):
    with pytest.raises(error, match=words):
        fo.max_concurrent_flow(fo.ring(4), method="lp", backend=backend, **options)


def test_inexact_message_quotes_the_bracket_in_the_callers_units(monkeypatch):
    # A point that is 1% short of optimal, reported "optimal": the result keeps the bracket
    # only, and its message quotes the same numbers as r.lower and r.upper (the solve itself
    # runs on traffic scaled near theta = 1; 400 Gb/s links make that scale differ from 1).
    from fabricopt.flow import certificate
    from fabricopt.flow import plan as api

    real = api.solve_lp

    def short(lp, *args, **kwargs):
        sol = real(lp, *args, **kwargs)
        sol.x = sol.x * 0.99
        return sol

    monkeypatch.setattr(api, "solve_lp", short)
    monkeypatch.setattr(certificate, "polish_duals", lambda *args, **kwargs: None)
    fab = fo.fat_tree(4)
    r = fo.max_concurrent_flow(fab, method="lp")
    assert r.status == "inexact" and r.theta is None
    assert f"[{r.lower:.9g}, {r.upper:.9g}]" in r.message
    certified(fab, r, exact=False)


def test_large_lps_skip_the_crossover_and_stay_certified(monkeypatch):
    # Pretend every LP is large: the default backend then runs interior point without
    # crossover (when highspy is installed) and the certificate proves what it found.
    # Ring C_8 with unit links: theta = 8 / 8**2 (see the closed-form cases above).
    pytest.importorskip("highspy")
    import fabricopt.flow.backends as backends

    monkeypatch.setattr(backends, "NO_CROSSOVER_ABOVE_NONZEROS", 0)
    fab = fo.ring(8)
    r = fo.max_concurrent_flow(fab, method="lp")
    assert "without crossover" in r.message or r.status == "optimal"
    assert r.lower <= 8 / 8**2 * (1 + 1e-9) and r.upper >= 8 / 8**2 * (1 - 1e-9)
    assert r.upper - r.lower <= 1e-6 * r.upper
    assert fo.check_certificate(fab, r).ok


def test_an_lp_stopped_early_is_capped_by_the_hierarchy_cut():
    # 8 servers of 4 GPUs, one 400 Gb/s NIC each, rail-optimized: each GPU sends 28 Gb/s out
    # of its server through its NIC, so theta = 400 / 28, the NIC cut. The full LP stopped
    # after one simplex iteration proves nothing below, and above its hop lengths give 3 x
    # that (42.86); the hierarchy's cut, offered to the certificate as the approximate
    # method's is, caps it at 400 / 28.
    fab = fo.cluster(fo.nvswitch_domain(4, 2, 4, 400.0), nodes=8, scale_out="rail_optimized",
                     leaf_radix=8)
    r = fo.max_concurrent_flow(fab, method="lp", work_limit=1)
    assert r.status == "iteration_limit" and r.theta is None
    assert r.upper == pytest.approx(400 / 28, rel=1e-9)
    certified(fab, r, exact=False)


def test_a_solver_status_it_does_not_name_is_judged_by_the_proofs(monkeypatch):
    # HiGHS's interior point may end "Unknown" (on superpod(1), after 160 s) with a point and
    # duals that prove a bracket. fat_tree(4) all-to-all: 16 hosts on 400G links,
    # non-blocking, so theta = 400 / 15 = 80/3 per pair.
    pytest.importorskip("highspy")
    from fabricopt.flow.backends import solve_lp as real_solve

    fab = fo.fat_tree(4)
    state = {"wobble": 0.0, "point": True}

    def unknown(lp, backend, time_limit, **options):
        sol = real_solve(lp, "highspy")
        if state["wobble"]:  # off its constraints: the proofs no longer meet
            sol.x = sol.x * (1 + state["wobble"] * np.sin(np.arange(len(sol.x))))
        if not state["point"]:
            sol.x = sol.dual_ub = sol.dual_eq = None
        sol.status, sol.message = "error", "Unknown"
        return sol

    monkeypatch.setattr(api, "solve_lp", unknown)
    # The proofs meet: the optimum, whatever the solver called it.
    r = fo.max_concurrent_flow(fab, method="lp")
    assert r.status == "optimal" and r.theta == pytest.approx(80 / 3, rel=1e-6)
    assert "Unknown" in r.message and fo.check_certificate(fab, r).ok
    # They do not meet: the bracket they prove, "inexact".
    state["wobble"] = 1e-2
    r = fo.max_concurrent_flow(fab, method="lp")
    assert r.status == "inexact" and r.theta is None and "Unknown" in r.message
    assert r.lower <= 80 / 3 * (1 + 1e-9) <= r.upper * (1 + 1e-9)
    assert r.upper - r.lower > 1e-6 * r.upper and fo.check_certificate(fab, r).ok
    # No point at all: nothing proven below, the status stays "error".
    state["point"] = False
    r = fo.max_concurrent_flow(fab, method="lp")
    assert r.status == "error" and r.theta is None and r.lower == 0
