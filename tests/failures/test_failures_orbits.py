"""One solve per orbit of failures: the N-1 table, criticality and sweeps against brute force."""

import math

import numpy as np
import pytest

import fabricopt as fo
from fabricopt.failures.orbits import FailureSymmetry, Pattern

SMALL = [
    pytest.param(lambda: fo.fat_tree(4), id="fat_tree4"),
    pytest.param(lambda: fo.leaf_spine(leaves=3, spines=2, endpoints_per_leaf=2), id="leaf_spine"),
    pytest.param(lambda: fo.ring(5), id="ring5"),
]


def brute(fab, links=None, switches=()):
    """Theta of ``fab`` with the given failures, solved alone with its certificate checked."""
    failed = fab.without(links=links or {}, switches=switches)
    r = fo.max_concurrent_flow(failed)
    assert fo.check_certificate(failed, r).ok
    return r


def close(a, b):
    return math.isclose(a, b, rel_tol=1e-6, abs_tol=1e-9)


@pytest.mark.parametrize("make", SMALL)
def test_link_orbits_match_every_link_solved_alone(make):
    fab = make()
    table = fo.single_failures(fab, kind="links")
    # Every bundle appears in exactly one orbit, and the multiplicities add up to the fabric's
    # physical links (each bundle counts its parallel links).
    members = [m for r in table.rows for m in r.members]
    bundles = {frozenset((u, v)): n for u, v, n in fab.graph.edges(data="links", default=1)}
    assert len(members) == len(set(map(frozenset, members))) == len(bundles)
    assert table.units == sum(bundles.values())
    for row in table.rows:
        assert row.lower <= row.upper
        for u, v in row.members:
            r = brute(fab, links={(u, v): 1})
            # The orbit's bracket holds the member's theta, solved on its own.
            assert row.lower <= r.upper * (1 + 1e-6) and r.lower <= row.upper * (1 + 1e-6)


@pytest.mark.parametrize("make", SMALL[:2])
def test_switch_orbits_match_brute_force_and_symmetry_off(make):
    fab = make()
    with_sym = fo.single_failures(fab, kind="switches")
    without = fo.single_failures(fab, kind="switches", symmetry=False)
    # symmetry=False solves every switch apart: one row per switch.
    assert without.solves == len(fab.switches) == with_sym.units
    alone = {r.members[0]: r for r in without.rows}
    for row in with_sym.rows:
        for w in row.members:
            assert close(alone[w].upper, row.upper) and close(alone[w].lower, row.lower)
    assert with_sym.solves < without.solves


def test_n1_table_of_a_leaf_spine_by_hand():
    # 3 leaves x 2 GPUs, 2 spines, 400 Gb/s links, all-to-all at 1 Gb/s per pair. Intact:
    # a GPU's 400 Gb/s link carries its 5 destinations, theta <= 400 / 5 = 80; a leaf's 800
    # Gb/s up carries 2 GPUs x 4 off-leaf destinations, 800 / 8 = 100, so theta = 80. One
    # failed uplink leaves 400 Gb/s for those 8 pair demands: theta = 50, 37.5% lost, and
    # each GPU sends 50 x 5 = 250 Gb/s.
    fab = fo.leaf_spine(leaves=3, spines=2, endpoints_per_leaf=2)
    table = fo.single_failures(fab, kind="links", tiers="leaf-spine")
    (row,) = table.rows
    assert row.multiplicity == 6
    assert close(table.intact_lower, 80.0) and close(row.theta, 50.0)
    assert close(row.lost, 0.375)
    assert close(row.gbps_lower, 250.0)   # 50 x 5 destinations at 1 Gb/s


@pytest.mark.parametrize("kind", ["links", "switches"])
def test_criticality_order_matches_exhaustive_solves(kind):
    fab = fo.fat_tree(4)
    rank = fo.criticality(fab, kind=kind)
    losses = [r.lost for r in rank.rows]
    assert losses == sorted(losses, reverse=True)
    # Each row's loss is the loss of its representative solved alone.
    intact = fo.max_concurrent_flow(fab).theta
    for row in rank.rows:
        m = row.members[0]
        r = brute(fab, links={tuple(m): 1}) if kind == "links" else brute(fab, switches=[m])
        assert close(row.lost, 1 - r.theta / intact)


def test_cutting_set_states_what_is_proven():
    fab = fo.fat_tree(4)
    # One leaf-spine link of fat_tree(4) costs 46% (criticality above), so 30% takes one.
    found = fo.cutting_set(fab, 0.3, tiers=["leaf-spine", "spine-core"])
    assert found.reached and found.smallest and len(found.failures) == 1
    # No single non-GPU link costs 90%: the lower bound on the set's size is 2.
    more = fo.cutting_set(fab, 0.9, tiers=["leaf-spine", "spine-core"], max_failures=3)
    assert more.min_size == 2
    assert more.upper <= more.intact_upper


def test_sweep_with_symmetry_matches_every_trial_solved():
    fab = fo.fat_tree(4)
    kwargs = dict(trials=12, seed=3, tiers=["leaf-spine", "spine-core"])
    sym = fo.failure_sweep(fab, [2 / 32], **kwargs)
    plain = fo.failure_sweep(fab, [2 / 32], symmetry=False, **kwargs)
    assert [t.failed for t in sym.trials] == [t.failed for t in plain.trials]
    for a, b in zip(sym.trials, plain.trials, strict=True):
        assert close(a.upper, b.upper) and close(a.lower, b.lower)
    assert sym.solves < len(sym.trials)
    # A shared trial names a trial that was solved itself.
    assert all(sym.trials[t.same_as].same_as is None for t in sym.trials if t.same_as is not None)


def test_descent_steps_are_automorphisms():
    fab = fo.fat_tree(4)
    fs = FailureSymmetry(fab)
    links = np.array(fs.bundle_links)
    edges = {frozenset((u, v)) for u, v in fab.graph.edges}
    for perm, bmap in fs.generators():
        # Every generator maps each bundle to the bundle of its ends' images, with the same
        # link count: failing a bundle or its image is the same failure up to relabelling.
        assert sorted(bmap.tolist()) == list(range(len(fs.bundles)))
        for b, image in enumerate(bmap):
            u, v = (fs.node_index[x] for x in fs.bundles[b])
            assert frozenset((fs.nodes[perm[u]], fs.nodes[perm[v]])) == fs.bundles[image]
            assert links[image] == links[b] and fs.bundles[image] in edges


def test_keys_never_merge_patterns_with_different_answers():
    fab = fo.fat_tree(4)
    fs = FailureSymmetry(fab)
    rng = np.random.default_rng(0)
    seen = {}
    for _ in range(30):
        picks = rng.choice(len(fs.bundles), size=2, replace=False)
        pattern = Pattern({fs.bundles[i]: 1 for i in picks}, frozenset())
        theta = brute(fab, links={tuple(fs.bundles[i]): 1 for i in picks}).theta
        key = fs.key(pattern)
        assert close(seen.setdefault(key, theta), theta)
    assert len(seen) < 30   # fat_tree(4)'s group merges some of the 30 random pairs


def test_only_invariant_traffic_is_grouped():
    fab = fo.ring(4)
    # Uniform all-to-all at any rate is invariant under every automorphism: one orbit.
    assert fo.single_failures(fab, traffic=fo.all_to_all(fab, gbps=2.0)).solves == 1
    # All-to-all among 3 of the 4 nodes is not: every link is solved on its own.
    part = fo.all_to_all(fab, endpoints=["n0", "n1", "n2"])
    table = fo.single_failures(fab, traffic=part)
    assert table.solves == 4 and "not used" in table.symmetry


def test_bad_input_is_rejected_before_work():
    with pytest.raises(fo.InvalidParameterError, match="kind"):
        fo.single_failures(fo.ring(4), kind="cables")
    with pytest.raises(fo.InvalidParameterError, match="tiers"):
        fo.criticality(fo.ring(4), tiers="spine")
    with pytest.raises(fo.InvalidParameterError, match="fraction"):
        fo.cutting_set(fo.ring(4), 1.5)
    # A misspelt tier gets the nearest of the fabric's tiers (fat_tree: gpu-leaf, leaf-spine,
    # spine-core), as every other misspelt name does.
    with pytest.raises(fo.InvalidParameterError, match="did you mean 'spine-core'"):
        fo.failure_sweep(fo.fat_tree(4), [0.1], tiers=["spine-cor"])


def test_a_shared_intact_solve_gives_the_same_table():
    fab = fo.fat_tree(4)
    intact = fo.max_concurrent_flow(fab)
    shared = fo.single_failures(fab, kind="switches", intact=intact)
    alone = fo.single_failures(fab, kind="switches")
    assert [(r.lower, r.upper) for r in shared.rows] == [(r.lower, r.upper) for r in alone.rows]
    with pytest.raises(fo.InvalidParameterError, match="intact"):
        fo.single_failures(fo.ring(4), intact=intact)


def test_invariant_is_the_same_across_each_generator():
    # first_equivalent only descends inside a group of equal invariants, so an automorphism
    # must never change the invariant: random 3-part patterns (links and a switch) of
    # fat_tree(4), and their images under every proven generator.
    fab = fo.fat_tree(4)
    fs = FailureSymmetry(fab)
    switches = [i for i, v in enumerate(fs.nodes) if v in set(fab.switches)]
    rng = np.random.default_rng(1)
    for _ in range(10):
        picks = rng.choice(len(fs.bundles), size=2, replace=False)
        w = int(rng.choice(switches))
        pattern = Pattern({fs.bundles[i]: 1 for i in picks}, frozenset([fs.nodes[w]]))
        for perm, bmap in fs.generators():
            image = Pattern({fs.bundles[bmap[i]]: 1 for i in picks},
                            frozenset([fs.nodes[perm[w]]]))
            assert (fs._invariant(image, fs._parts(image))
                    == fs._invariant(pattern, fs._parts(pattern)))
    # And it tells apart what the group does not relate: two failed links on one leaf, and
    # on two leaves of different pods.
    one_leaf = Pattern({frozenset(("leaf0", "spine0.0")): 1,
                        frozenset(("leaf0", "spine0.1")): 1}, frozenset())
    two_pods = Pattern({frozenset(("leaf0", "spine0.0")): 1,
                        frozenset(("leaf2", "spine1.0")): 1}, frozenset())
    assert (fs._invariant(one_leaf, fs._parts(one_leaf))
            != fs._invariant(two_pods, fs._parts(two_pods)))


def test_table_prints_the_intact_bracket_when_not_proven():
    # Proven: leaf_spine(3, 2, 2) carries theta 80 (see the by-hand test above), 80 x 5
    # destinations = 400 Gb/s per GPU.
    proven = fo.single_failures(fo.leaf_spine(leaves=3, spines=2, endpoints_per_leaf=2),
                                tiers="leaf-spine")
    assert "intact           400 Gb/s per GPU (theta 80)" in str(proven)
    # Not proven (approximate to a 50% gap): the intact line gives both ends of the bracket,
    # not its lower end alone, so a failed row's upper end above it reads as a bracket too.
    table = fo.single_failures(fo.fat_tree(4), method="approx", gap=0.5)
    assert table.intact_theta is None and table.intact_lower < table.intact_upper
    out = table.mean_out_gbps
    line = next(x for x in str(table).splitlines() if x.startswith("intact"))
    assert f"[{table.intact_lower * out:.4g}, {table.intact_upper * out:.4g}] Gb/s" in line
