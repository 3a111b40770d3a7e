"""Failure models: exactly the members fail, probabilities and seeds reproduce, distributions
match brute force."""

import math

import numpy as np
import pytest

import fabricopt as fo
from fabricopt.failures.models import group_draw, union_draw


def test_a_risk_group_fails_exactly_its_members():
    fab = fo.fat_tree(4)
    g = fab.graph
    members = {"g0", "g1", "leaf0"}
    (grp,) = fo.groups_by(fab, {v: "rack0" for v in members})
    assert grp.gpus == {"g0", "g1"} and grp.switches == {"leaf0"}
    failed = group_draw(grp).apply(fab)
    # The GPUs are gone from graph and endpoints, the switch is removed, nothing else.
    assert set(g) - set(failed.graph) == members
    assert set(fab.endpoints) - set(failed.endpoints) == {"g0", "g1"}
    touching = {(u, v) for u, v in g.edges if {u, v} & members}
    assert set(g.edges) - set(failed.graph.edges) == touching
    assert all(failed.graph.edges[e] == g.edges[e] for e in failed.graph.edges)


def test_nested_groups_fail_every_member_of_their_children():
    fab = fo.fat_tree(4)
    racks = fo.groups_by(fab, {"g0": "r0", "leaf0": "r0", "g2": "r1", "leaf1": "r1"})
    (row,) = fo.nest_groups(fab, racks, {"r0": "row0", "r1": "row0"})
    assert row.switches == {"leaf0", "leaf1"} and row.gpus == {"g0", "g2"}
    both = union_draw([group_draw(r) for r in racks]).apply(fab)
    assert set(group_draw(row).apply(fab).graph.edges) == set(both.graph.edges)


def test_groups_by_attribute_and_bad_names():
    fab = fo.superpod(1)
    planes = fo.groups_by(fab, "su")
    assert len(planes) == 1   # one scalable unit
    with pytest.raises(fo.InvalidParameterError, match=r"groups_by\(\): key must be a node "
                       r"attribute .* got 'rack'"):
        fo.groups_by(fab, "rack")
    with pytest.raises(fo.InvalidParameterError, match=r"not nodes: \['nowhere'\]"):
        fo.groups_by(fab, {"nowhere": 1})


def test_nest_groups_names_the_argument_at_fault():
    fab = fo.leaf_spine(leaves=2, spines=1, endpoints_per_leaf=1)
    racks = fo.groups_by(fab, {"g0": "r0", "leaf0": "r0", "g1": "r1", "leaf1": "r1"})
    with pytest.raises(fo.InvalidParameterError, match=r"parent must .* \(did you mean 'r0'"):
        fo.nest_groups(fab, racks, {"r00": "row"})
    with pytest.raises(fo.InvalidParameterError, match="groups must be a list of RiskGroup"):
        fo.nest_groups(fab, ["r0"], {"r0": "row"})
    # racks of another fabric: their nodes are not in this one
    with pytest.raises(fo.InvalidParameterError, match="group 'r0' has nodes not in it"):
        fo.nest_groups(fo.ring(3), racks, {"r0": "row"})


def test_independent_probabilities_and_annual_failure_rates():
    fab = fo.ring(6)
    rng = np.random.default_rng(0)
    assert not fo.Independent("links", probability=0.0).draw(fab, rng).pattern.links
    assert len(fo.Independent("links", probability=1.0).draw(fab, rng).pattern.links) == 6
    g = fab.graph.copy()
    for u, v in g.edges:
        g.edges[u, v]["afr"] = 0.5 if u == "n0" or v == "n0" else 0.0
    marked = fo.Fabric(g, fab.endpoints, "ring(6) with afr")
    model = fo.Independent("links", hours=8766.0)
    probs = {label: p for label, _, p in model.probabilities(marked)}
    # Half a failure a year over one year: p = 1 - exp(-0.5); links away from n0 never fail.
    assert math.isclose(probs["link n0-n1"], 1 - math.exp(-0.5))
    assert probs["link n2-n3"] == 0.0
    with pytest.raises(fo.InvalidParameterError, match="probability"):
        fo.Independent("links", probability=1.5)
    # No probability and no rate on any link: every draw would fail nothing, a silent
    # "no loss"; it is an error naming what to give.
    with pytest.raises(fo.InvalidParameterError, match="no link .* has an 'afr' attribute"):
        fo.Independent("links").draw(fab, rng)


def test_seeds_reproduce_draws():
    fab = fo.fat_tree(4)
    model = fo.Mixture([(0.5, fo.Independent("links", probability=0.1)),
                        (0.5, fo.GroupFailures(count=2))])
    a = fo.failure_distribution(fab, model, trials=6, seed=7)
    b = fo.failure_distribution(fab, model, trials=6, seed=7)
    assert [o.label for o in a.outcomes] == [o.label for o in b.outcomes]
    assert [o.upper for o in a.outcomes] == [o.upper for o in b.outcomes]
    assert a.seed == 7


def test_every_single_weights_count_physical_links():
    fab = fo.leaf_spine(leaves=2, spines=1, endpoints_per_leaf=1, links_per_pair=2)
    draws = fo.EverySingle("links", tiers="leaf-spine").enumerate(fab)
    # Two bundles of 2 links each: 4 single-link failures, 2 per bundle.
    assert [d.weight for d in draws] == [0.5, 0.5]
    mix = fo.Mixture([(3, fo.EverySingle("links")), (1, fo.EverySingle("switches"))])
    assert math.isclose(sum(d.weight for d in mix.enumerate(fab)), 1.0)


def test_distribution_matches_every_switch_solved_alone():
    fab = fo.fat_tree(4)
    d = fo.failure_distribution(fab, fo.EverySingle("switches"), trials=None)
    plain = fo.failure_distribution(fab, fo.EverySingle("switches"), trials=None,
                                     symmetry=False)
    assert d.solves < plain.solves == len(fab.switches)
    for o, p, w in zip(d.outcomes, plain.outcomes, fab.switches, strict=True):
        failed = fab.without(switches=[w])
        r = fo.max_concurrent_flow(failed)
        assert fo.check_certificate(failed, r).ok
        assert o.lower <= r.upper * (1 + 1e-6) and r.lower <= o.upper * (1 + 1e-6)
        assert math.isclose(o.upper, p.upper, rel_tol=1e-6)
    # Percentile brackets are ordered and hold the mean's.
    lo5, hi5 = d.percentile(5)
    assert lo5 <= hi5 and d.percentile(50)[0] >= lo5


def test_distribution_rejects_bad_input():
    fab = fo.ring(4)
    with pytest.raises(fo.InvalidParameterError, match="model"):
        fo.failure_distribution(fab, "links")
    with pytest.raises(fo.InvalidParameterError, match="trials"):
        fo.failure_distribution(fab, fo.Independent(probability=0.1), trials=None)
    with pytest.raises(fo.InvalidParameterError, match="metrics"):
        fo.failure_distribution(fab, fo.EverySingle(), metrics=["latency"])


def test_metrics_per_pattern_are_bounded_by_the_optimum():
    fab = fo.fat_tree(4)
    d = fo.failure_distribution(fab, fo.EverySingle("switches"), trials=None,
                                metrics={"routed": None, "gpus": lambda f, up: len(up)})
    for o in d.outcomes:
        # ECMP routing is one feasible flow: it never carries more than the certified optimum.
        assert o.metrics["routed"] <= o.gbps_upper * (1 + 1e-9)
        # A failed switch takes no GPU out of the job: all 16 stay up.
        assert o.metrics["gpus"] == 16 == o.gpus_up
    assert d.percentile(50, "gpus") == (16.0, 16.0)


def test_distribution_names_its_worst_pattern():
    # leaf_spine(2, 2, 2), 400 Gb/s links. The group "spines" (both spines) leaves the two
    # leaves apart: all-to-all among the 4 GPUs is 0. The group "rack 0" (leaf0 with g0, g1)
    # takes its GPUs out: g2 and g3 meet on leaf1 at their 400 Gb/s links.
    fab = fo.leaf_spine(leaves=2, spines=2, endpoints_per_leaf=2)
    groups = fo.groups_by(fab, {"spine0": "spines", "spine1": "spines", "leaf0": "rack 0",
                                "g0": "rack 0", "g1": "rack 0"})
    d = fo.failure_distribution(fab, fo.GroupFailures(groups), trials=None)
    by_label = {o.label: o for o in d.outcomes}
    assert by_label["spines"].gbps_upper == 0.0 and by_label["spines"].gpus_up == 4
    assert by_label["rack 0"].gbps_lower == pytest.approx(400.0)
    assert d.worst is by_label["spines"]
    assert ("worst            spines: 0 Gb/s per GPU (4 GPUs up, not all connected); 1 of 2 "
            "patterns") in str(d)


@pytest.mark.parametrize("make, match", [
    (lambda: fo.failure_sweep(fo.ring(4), [0.1], symmetry=float("nan")),
     r"failure_sweep\(\): symmetry must be True or False, got nan"),
    (lambda: fo.failure_sweep(fo.ring(4), [0.1], symmetry=object()),
     r"failure_sweep\(\): symmetry must be True or False"),
    (lambda: fo.EverySingle(tiers=float("nan")),
     r"EverySingle\(\): tiers must be a tier name or a list of them, got nan"),
    (lambda: fo.Independent(tiers=float("nan")),
     r"Independent\(\): tiers must be a tier name or a list of them, got nan"),
    (lambda: fo.Independent(attribute=float("nan")),
     r"Independent\(\): attribute must be the name of a link or switch attribute"),
    (lambda: fo.Independent(hours=math.inf),
     r"Independent\(\): hours must be a finite number > 0, got inf"),
])
def test_odd_arguments_are_refused_where_given(make, match):
    # NaN, inf and objects were taken silently (a NaN tier list chose nothing to fail).
    with pytest.raises(fo.InvalidParameterError, match=match):
        make()
