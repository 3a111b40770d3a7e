"""Failures: Fabric.without, fail_random, risk_groups and failure_sweep."""

import math
from concurrent.futures import ThreadPoolExecutor

import networkx as nx
import numpy as np
import pytest

import fabricopt as fo
import fabricopt.failures.sweep as failures_module
from fabricopt.failures.sweep import failure_count


def _theta(fab):
    r = fo.max_concurrent_flow(fab, method="lp")
    assert r.exact and fo.check_certificate(fab, r).ok
    return r.theta


# -- Fabric.without ---------------------------------------------------------------------------

def test_without_whole_bundle_and_part_of_one():
    fab = fo.leaf_spine(leaves=2, spines=2, endpoints_per_leaf=2, links_per_pair=3)
    whole = fab.without(links=[("spine0", "leaf0")])  # either end first
    assert not whole.graph.has_edge("leaf0", "spine0")
    assert not whole.graph.has_edge("spine0", "leaf0")
    part = fab.without(links={("leaf0", "spine0"): 2})
    # 3 links of 400 Gb/s, 2 removed: 1 link, 400 Gb/s, in both directions.
    for a, b in (("leaf0", "spine0"), ("spine0", "leaf0")):
        assert part.graph[a][b]["links"] == 1 and part.graph[a][b]["capacity"] == 400.0
    assert part.removed.links == (("leaf0", "spine0", 2),) and part.removed.physical_links == 2
    assert fab.graph["leaf0"]["spine0"]["links"] == 3  # the original is untouched
    assert fab.symmetry is not None and part.symmetry is None and part.params["edited"]


def test_without_switch_removes_its_arcs_and_removals_accumulate():
    fab = fo.fat_tree(4)
    a = fab.without(switches=["core0.0"])
    b = a.without(links=[("leaf0", "spine0.0")])
    assert "core0.0" not in b.graph and b.graph.number_of_nodes() == 35  # 36 nodes - 1
    assert b.removed.switches == ("core0.0",) and b.removed.links == (("leaf0", "spine0.0", 1),)


@pytest.mark.parametrize("kwargs, match", [
    ({"links": [("leaf0", "leaf1")]}, "no link between 'leaf0' and 'leaf1'"),
    ({"links": [("leaf0", "nowhere")]}, "no link"),
    ({"links": [("leaf0", "spine0"), ("spine0", "leaf0")]}, "named twice"),
    ({"links": {("leaf0", "spine0"): 2}}, "from 1 to its 1"),
    ({"links": {("leaf0", "spine0"): 0}}, "from 1 to its 1"),
    ({"links": ["leaf0"]}, r"\(u, v\) pair"),
    ({"switches": ["spine9"]}, "no switch 'spine9'"),
    ({"switches": ["g0"]}, "is a GPU"),
    ({"switches": "spine0"}, "iterable"),
])
def test_without_rejects_bad_input(kwargs, match):
    fab = fo.leaf_spine(leaves=2, spines=1, endpoints_per_leaf=1)
    with pytest.raises(fo.InvalidParameterError, match=match):
        fab.without(**kwargs)


# -- fail_random --------------------------------------------------------------------------------

@pytest.mark.parametrize("fraction", [0.0, 0.01, 0.05, 0.2, 0.5, 1.0])
def test_fail_random_counts_follow_the_rounding_rule(fraction):
    fab = fo.fat_tree(4)
    # fat_tree(4): 16 leaf-spine and 16 spine-core links (k^3/4 each), 32 eligible.
    failed = fo.fail_random(fab, fraction, seed=2, tiers=["leaf-spine", "spine-core"])
    assert failed.removed.physical_links == math.floor(fraction * 32 + 0.5)
    assert {failed.graph[u][v]["tier"] for u, v, _ in failed.removed.links if
            failed.graph.has_edge(u, v)} <= {"leaf-spine", "spine-core"}
    # 20 switches in fat_tree(4) (8 leaves, 8 aggregation, 4 core).
    gone = fo.fail_random(fab, fraction, seed=2, kind="switches")
    assert len(gone.removed.switches) == math.floor(fraction * 20 + 0.5)


def test_fail_random_counts_parallel_links_one_by_one():
    fab = fo.leaf_spine(leaves=2, spines=2, endpoints_per_leaf=1, links_per_pair=4)
    # 4 bundles of 4 leaf-spine links: 16 physical links; half of them is 8.
    failed = fo.fail_random(fab, 0.5, seed=0, tiers="leaf-spine")
    left = sum(d["links"] for u, v, d in failed.graph.edges(data=True)
               if d["tier"] == "leaf-spine") // 2
    assert failed.removed.physical_links == 8 and left == 8
    for _, _, d in failed.graph.edges(data=True):  # capacity follows the links left
        assert d["capacity"] == 400.0 * d["links"]


def test_failure_count_rounds_half_up():
    assert failure_count(0.5, 1) == 1 and failure_count(0.5, 3) == 2  # 0.5, 1.5 -> up
    assert failure_count(0.01, 249) == 2 and failure_count(0.01, 250) == 3


def test_fail_random_seed_reproduces():
    fab = fo.fat_tree(4)
    for kind in ("links", "switches", "groups"):
        a = fo.fail_random(fab, 0.2, seed=7, kind=kind)
        b = fo.fail_random(fab, 0.2, seed=7, kind=kind)
        assert a.removed == b.removed and nx.utils.graphs_equal(a.graph, b.graph)
    assert fo.fail_random(fab, 0.2, seed=7).removed != fo.fail_random(fab, 0.2, seed=8).removed


@pytest.mark.parametrize("kwargs, match", [
    ({"fraction": 1.5}, "fraction must be a number from 0 to 1"),
    ({"fraction": -0.1}, "fraction"),
    ({"fraction": float("nan")}, "fraction"),
    ({"fraction": True}, "fraction"),
    ({"fraction": 0.1, "kind": "racks"}, "kind must be one of"),
    ({"fraction": 0.1, "tiers": []}, "non-empty"),
    ({"fraction": 0.1, "tiers": "core-core"}, "tiers of the fabric"),
    ({"fraction": 0.1, "seed": -1}, "seed"),
])
def test_fail_random_rejects_bad_input(kwargs, match):
    with pytest.raises(fo.InvalidParameterError, match=match):
        fo.fail_random(fo.ring(4), **kwargs)


@pytest.mark.parametrize("make", [
    lambda: fo.ring(6),
    lambda: fo.torus((3, 3)),
    lambda: fo.fat_tree(4),
    lambda: fo.leaf_spine(leaves=3, spines=2, endpoints_per_leaf=2, links_per_pair=2),
    lambda: fo.jellyfish(switches=8, network_ports=3, endpoints_per_switch=1, seed=3),
])
def test_removing_links_never_raises_theta(make):
    # Nested failures: every link of the first set is also in the second, so the second
    # fabric is a subgraph of the first with no more capacity on any arc.
    fab = make()
    first = fo.fail_random(fab, 0.1, seed=1)
    second = fo.fail_random(first, 0.1, seed=2)
    assert second.removed.physical_links > first.removed.physical_links > 0
    thetas = [_theta(f) for f in (fab, first, second)]
    assert thetas[0] >= thetas[1] * (1 - 1e-9) and thetas[1] >= thetas[2] * (1 - 1e-9)


def test_failed_fabric_certificate_rechecks():
    failed = fo.fail_random(fo.fat_tree(4), 0.25, seed=4, tiers="leaf-spine")
    r = fo.max_concurrent_flow(failed)
    assert r.method == "lp" and fo.check_certificate(failed, r).ok


# -- shared-risk groups ---------------------------------------------------------------------

def test_derived_groups_cover_switches_servers_and_bundles():
    fab = fo.cluster(scale_up=fo.dgx_h100(), nodes=2, scale_out="rail_optimized")
    groups = fo.risk_groups(fab)
    names = [g.name for g in groups]
    assert names.count("server 0") == 1 and names.count("server 1") == 1
    server = next(g for g in groups if g.name == "server 0")
    # A DGX H100 holds 4 NVSwitch chips; the server group takes them and the 8 NIC links.
    assert len(server.switches) == 4 and len(server.links) == 8
    bundles = [g for g in groups if g.name.startswith("bundle")]
    assert len(bundles) == fab.graph.number_of_edges() // 2


def test_declared_groups_replace_derived_ones():
    fab = fo.leaf_spine(leaves=2, spines=2, endpoints_per_leaf=1)
    for spine in ("spine0", "spine1"):
        fab.graph.nodes[spine]["risk_group"] = "feed-A"
    fab.graph["leaf0"]["spine0"]["risk_group"] = ["tray-1"]
    groups = {g.name: g for g in fo.risk_groups(fab)}
    assert set(groups) == {"feed-A", "tray-1"}
    assert groups["feed-A"].switches == {"spine0", "spine1"}
    failed = fo.fail_random(fab, 0.5, seed=0, kind="groups")  # 1 of 2 groups
    assert failed.removed.switches == ("spine0", "spine1") or failed.removed.links


# -- failure_sweep ----------------------------------------------------------------------------

def _comparable(sweep):
    return [{k: v for k, v in row.items() if k != "seconds"} for row in sweep.to_records()]


def test_failure_sweep_reproduces_and_summarises():
    fab = fo.fat_tree(4)
    a = fo.failure_sweep(fab, [0.0, 0.1], trials=3, seed=5, tiers="leaf-spine")
    with ThreadPoolExecutor(2) as ex:
        b = fo.failure_sweep(fab, [0.0, 0.1], trials=3, seed=5, tiers="leaf-spine",
                             executor=ex)
    assert _comparable(a) == _comparable(b)
    c = fo.failure_sweep(fab, [0.0, 0.1], trials=3, seed=a.seed, tiers="leaf-spine")
    assert _comparable(a) == _comparable(c)
    rows = a.to_records()
    assert len(rows) == 6 and a.eligible == 16  # 16 leaf-spine links in fat_tree(4)
    # 10% of 16 rounds to 2 (1.6, half up).
    assert [r["removed_links"] for r in rows] == [0, 0, 0, 2, 2, 2]
    intact, failed = a.summary
    # Intact fat_tree(4) at 400 Gb/s: theta = 400 / (N - 1) with N = 16.
    assert intact.theta_min == pytest.approx(400 / 15) == intact.theta_max
    assert failed.theta_max <= intact.theta_min * (1 + 1e-9)
    assert failed.lower_min <= failed.theta_min <= failed.theta_median <= failed.theta_max
    assert a.to_csv().count("\n") == 7  # header + 6 trials
    assert "leaf-spine" in str(a)


def test_failure_sweep_summary_reads_against_intact():
    # ring(6): intact theta 8/36, one failed link leaves a path at 1/9 (failure_sweep's
    # example): every trial exact, at half the intact throughput.
    sweep = fo.failure_sweep(fo.ring(6), [0.0, 1 / 6], trials=3, seed=1)
    intact, failed = sweep.summary
    assert (failed.proven, failed.bracketed, failed.widest_gap) == (3, 0, 0.0)
    assert sweep.of_intact(failed.lower_median) == pytest.approx(0.5)
    assert sweep.of_intact(intact.lower_min) == pytest.approx(1.0)
    row = str(sweep).splitlines()[-1].split()
    assert row[1:7] == ["3", "3", "0", "50.0%", "50.0%", "-"]  # trials exact bracketed ...


def test_failure_sweep_summary_of_bracketed_trials():
    # Three trials at intact theta 4 (100 Gb/s per GPU at theta 1): one exact at 2, two
    # bracketed, [1.5, 1.6] and [1, 1.02]. What each proves: 2, 1.5, 1: median 1.5 = 37.5% of
    # intact, worst 1 = 25%, 100 Gb/s; widest bracket (1.6 - 1.5) / 1.6 = 6.25% (the other
    # 0.02 / 1.02 = 1.96%).
    def trial(j, theta, lower, upper):
        return failures_module.FailureTrial(0.1, j, 1, 0, "a-b x1", theta, lower, upper,
                                            "optimal" if theta else "inexact", "auto",
                                            "leaf-spine", 0.1)

    sweep = failures_module.FailureSweep(
        "fab", "links", None, 10, 1, [trial(0, 2.0, 2.0, 2.0), trial(1, None, 1.5, 1.6),
                                      trial(2, None, 1.0, 1.02)],
        intact_theta=4.0, intact_lower=4.0, intact_upper=4.0, solves=3, mean_out_gbps=100.0)
    (s,) = sweep.summary
    assert (s.proven, s.bracketed, s.lower_median) == (1, 2, 1.5)
    assert s.widest_gap == pytest.approx(0.0625)
    header, row = str(sweep).splitlines()[-2:]
    assert header.split()[:9] == ["fraction", "trials", "exact", "bracketed", "median", "worst",
                                  "widest", "bracket", "worst"]
    assert row.split() == ["0.1", "3", "1", "2", ">=", "37.5%", ">=", "25.0%", "6.25%", ">=",
                           "100", "leaf-spine"]


def test_failure_sweep_progress_is_the_sweeps_own():
    # A function is told (done, total) after each trial, as compare's progress is, and is not
    # handed on to the solves (max_concurrent_flow takes True or False only): 2 fractions x
    # 3 trials = 6 trials, the ring's equivalent draws counted when their solve is done.
    seen = []
    told = fo.failure_sweep(fo.ring(6), [0.0, 1 / 6], trials=3, seed=1,
                            progress=lambda done, total: seen.append((done, total)))
    assert seen == [(done, 6) for done in range(1, 7)]
    with ThreadPoolExecutor(2) as ex:
        seen.clear()
        fo.failure_sweep(fo.ring(6), [0.0, 1 / 6], trials=3, seed=1, executor=ex,
                         progress=lambda done, total: seen.append((done, total)))
        assert seen == [(done, 6) for done in range(1, 7)]
    # True and False show a bar or not; the answers are the same either way.
    for shown in (True, False):
        again = fo.failure_sweep(fo.ring(6), [0.0, 1 / 6], trials=3, seed=1, progress=shown)
        assert _comparable(again) == _comparable(told)
    with pytest.raises(fo.InvalidParameterError,
                       match=r"failure_sweep\(\): progress must be None, True, False or a "
                       r"function progress\(done, total\), got 'yes'"):
        fo.failure_sweep(fo.ring(6), [0.1], progress="yes")


@pytest.mark.parametrize("kwargs, match", [
    ({"fractions": []}, "non-empty"),
    ({"fractions": [0.1, 2.0]}, "fraction"),
    ({"fractions": "0.1"}, "fractions"),
    ({"fractions": [0.1], "trials": 0}, "trials"),
    ({"fractions": [0.1], "executor": 4}, "executor"),
    ({"fractions": [0.1], "kind": "rack"}, "kind"),
])
def test_failure_sweep_rejects_bad_input(kwargs, match):
    with pytest.raises(fo.InvalidParameterError, match=match):
        fo.failure_sweep(fo.ring(4), **kwargs)


def test_arcless_fabric_has_theta_zero_with_the_unreachable_pair():
    # A ring of 2 minus its only link: two GPUs, no arcs; nothing can be sent.
    fab = fo.ring(2).without(links=[("n0", "n1")])
    for method in ("auto", "lp"):
        r = fo.max_concurrent_flow(fab, method=method)
        assert r.theta == 0.0 and r.unreachable == ("n0", "n1")
        assert fo.check_certificate(fab, r).ok
    r = fo.max_concurrent_flow(fo.from_networkx(nx.empty_graph(2)))
    assert r.theta == 0.0 and r.unreachable == (0, 1)


def test_auto_takes_the_approximate_method_when_failures_leave_no_group():
    # 1% of all superpod(1) links failed (seed 1): NVLink lanes fail too, so no useful group
    # is left and the full LP has about 2 million nonzeros (above MAX_AUTO_NONZEROS): no
    # LP runs. The bounds stage (PXN around the lost NICs) already brackets theta within
    # the approximate method's 1% gap, so it answers without rounds. A GPU that lost its
    # NIC link sends through a sibling's NIC, so theta must fall below the intact 50/31
    # (NIC-bound: 400 Gb/s over 248 Gb/s).
    fab = fo.fail_random(fo.superpod(1), 0.01, seed=1)
    r = fo.max_concurrent_flow(fab)
    assert r.method in ("approx", "bounds") and r.upper - r.lower <= 0.01 * r.upper
    assert r.upper <= 50 / 31 * (1 + 1e-9)
    assert fo.check_certificate(fab, r).ok


# -- solve_failed: the bounds before a solve --------------------------------------------------

def _failed_fat_tree(monkeypatch):
    """fat_tree(4) minus leaf0-agg0 and leaf2-agg2 of its pods, with the bounds pass on for
    any size (it runs only above FIND_SYMMETRY_NONZEROS, which fat_tree(16) is)."""
    monkeypatch.setattr(failures_module, "FIND_SYMMETRY_NONZEROS", 0)
    fab = fo.fat_tree(4)
    traffic = fo.all_to_all(fab)
    intact, warm = failures_module.intact_solve(fab, traffic, "auto", True, {})
    pool = failures_module._Pool.of(fab, "links", frozenset(["leaf-spine", "spine-core"]))
    return pool.fail(fab, 2 / 32, np.random.default_rng(0)), traffic, warm


def test_solve_failed_takes_the_bounds_within_gap_and_solves_otherwise(monkeypatch):
    failed, traffic, warm = _failed_fat_tree(monkeypatch)
    theta = _theta(failed)  # the full LP's, certified (25 here; the intact fabric's is 400/15)
    # The bounds pass (hierarchy cuts above; the leaf-level routing or WCMP below, and one
    # approximate round) brackets it within a 40% gap: that bracket is the answer, certified
    # on the failed fabric (closed exactly here by the leaf-level routing, else inexact).
    loose = failures_module.solve_failed(failed, traffic, "auto", {"gap": 0.4}, warm)
    assert loose.status in ("inexact", "optimal")
    assert (loose.theta is None) == (loose.status == "inexact")
    assert loose.upper - loose.lower <= 0.4 * loose.upper
    assert loose.lower <= theta * (1 + 1e-9) and theta <= loose.upper * (1 + 1e-9)
    assert fo.check_certificate(failed, loose, traffic).ok
    # Not within the default 1%: the method solves it, exactly here.
    tight = failures_module.solve_failed(failed, traffic, "auto", {}, warm)
    assert tight.exact and tight.theta == pytest.approx(theta, rel=1e-6)
    assert fo.check_certificate(failed, tight, traffic).ok
    # A limit on the solver asks for its run: no answer from the bounds pass.
    limited = failures_module.solve_failed(failed, traffic, "auto",
                                           {"gap": 0.4, "time_limit": 60}, warm)
    assert "within gap" not in limited.message and limited.exact


def test_solve_failed_answers_a_cut_off_gpu_with_zero():
    # fat_tree(4) minus g0's only link: g0 can neither send nor receive, so theta is 0,
    # proven by the distance bound (an unreachable pair) without routing anything.
    fab = fo.fat_tree(4)
    traffic = fo.all_to_all(fab)
    _, warm = failures_module.intact_solve(fab, traffic, "auto", True, {})
    failed = fab.without(links=[("g0", "leaf0")])
    r = failures_module.solve_failed(failed, traffic, "auto", {}, warm)
    assert r.exact and r.theta == 0.0 and r.unreachable is not None
    assert fo.check_certificate(failed, r, traffic).ok


@pytest.mark.slow  # the full LP it is checked against takes about 1.5 s
@pytest.mark.parametrize("links", [[("leaf8", "spine2.3")], [("core3.1", "spine1.3")]])
def test_solve_failed_uses_the_group_a_small_failed_fabric_keeps(links):
    # fat_tree(8) minus one link: its full LP (about 49,000 nonzeros) is below
    # FIND_SYMMETRY_NONZEROS, so max_concurrent_flow would solve it whole; a failure trial
    # looks for the group the failed fabric keeps (2 or 3 orbits on the GPUs) and solves the
    # symmetric LP, which must agree with the full LP (solved here) and re-check.
    fab = fo.fat_tree(8)
    traffic = fo.all_to_all(fab)
    _, warm = failures_module.intact_solve(fab, traffic, "auto", True, {})
    failed = fab.without(links=links)
    r = failures_module.solve_failed(failed, traffic, "auto", {}, warm)
    assert r.method == "symmetric" and r.theta == pytest.approx(_theta(failed), rel=1e-6)
    assert fo.check_certificate(failed, r, traffic).ok


def test_sweep_builds_a_failed_fabric_only_for_patterns_it_solves(monkeypatch):
    # 40 single-link draws on a ring of 6 fall into one orbit: the rotations. The sweep
    # draws what fails without copying the graph, and copies it once, for its one solve.
    built = []
    real = failures_module.apply_removed
    monkeypatch.setattr(failures_module, "apply_removed",
                        lambda fab, removed: built.append(removed) or real(fab, removed))
    sweep = fo.failure_sweep(fo.ring(6), [1 / 6], trials=40, seed=3)
    assert sweep.solves == len(built) == 1
    # theta of a 6-node path, 1/9 (see failure_sweep's example), in every trial.
    assert all(t.theta == pytest.approx(1 / 9) for t in sweep.trials)
