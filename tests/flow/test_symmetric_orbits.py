"""The symmetric method with several orbits on the endpoints: one root flow per orbit.

Claims come from tests/orbit_claims.py (the orbits of the fabric's automorphism group, proven
by VF2 where VF2 is fast). The exact value of every case is the full LP's, solved on the same
fabric; both results are re-proven by ``fo.check_certificate`` (tests/flow_helpers.py).
"""

from dataclasses import replace

import numpy as np
import pytest
from flow_helpers import certified
from orbit_claims import proven_claim, refinement_claim

import fabricopt as fo
from fabricopt.symmetry.search import with_symmetry


def unequal_leaf_spine():
    """4 leaves x 2 GPUs, 2 spines, 2 links per bundle; leaf0-spine0 keeps one link."""
    return fo.leaf_spine(4, 2, 2, links_per_pair=2).without(links={("leaf0", "spine0"): 1})


IRREGULAR = {
    "ring6-cut": lambda: fo.ring(6).without_links([("n0", "n1")]),
    "ring7-cut": lambda: fo.ring(7).without_links([("n0", "n1")]),
    "torus3x3-cut": lambda: fo.torus((3, 3)).without_links([("n0.0", "n0.1")]),
    "torus3x4-cut": lambda: fo.torus((3, 4)).without_links([("n0.0", "n1.0")]),
    "hypercube3-cut": lambda: fo.hypercube(3).without_links([("n0", "n1")]),
    "fat_tree4-cut": lambda: fo.fat_tree(4).without_links([("leaf0", "spine0.0")]),
    "leaf_spine-unequal": unequal_leaf_spine,
}


@pytest.mark.parametrize("include_endpoint_links", [True, False])
@pytest.mark.parametrize("name", sorted(IRREGULAR))
def test_several_orbits_match_the_full_lp(name, include_endpoint_links):
    fab = proven_claim(IRREGULAR[name]())
    assert fab.symmetry.n_endpoint_orbits > 1  # the failure broke transitivity
    ok, why = fo.flow.symmetric_applicable(fab, fo.all_to_all(fab))
    assert ok, why
    sym = certified(fab, fo.max_concurrent_flow(
        fab, method="symmetric", include_endpoint_links=include_endpoint_links))
    full = certified(fab, fo.max_concurrent_flow(
        fab, method="lp", include_endpoint_links=include_endpoint_links))
    assert sym.theta == pytest.approx(full.theta, rel=1e-7)
    assert sym.per_endpoint_gbps == pytest.approx(full.per_endpoint_gbps, rel=1e-7)
    assert sym.mean_out_gbps == pytest.approx(full.mean_out_gbps, rel=1e-12)
    # The lifted loads fit the arcs the LP constrains (the certificate re-checked them).
    assert sym.max_overload <= 1 + 1e-9


def test_closed_form_of_a_ring_with_one_link_cut():
    # ring(6) without n0-n1 is the path n1 n2 n3 n4 n5 n0 of unit links. All-to-all at
    # 1 Gb/s: the middle link (n3-n4) carries 3 x 3 = 9 Gb/s each way, the most of any
    # (a cut of a path into i and 6 - i nodes carries i (6 - i) <= 9), so theta = 1/9.
    fab = proven_claim(fo.ring(6).without_links([("n0", "n1")]))
    # Reflection of the path is the only non-trivial automorphism: three endpoint orbits.
    assert fab.symmetry.n_endpoint_orbits == 3
    r = certified(fab, fo.max_concurrent_flow(fab, method="symmetric"))
    assert r.theta == pytest.approx(1 / 9, rel=1e-9)


def test_one_orbit_reproduces_the_transitive_lp():
    # A transitive claim given explicitly as one endpoint orbit builds the very LP of the
    # generator's claim (one root, the same rows, columns and coefficients).
    fab = fo.torus((3, 4))
    one = with_symmetry(fab, replace(fab.symmetry,
                                     endpoint_orbit=dict.fromkeys(fab.endpoints, 7)))
    a = fo.flow.build_symmetric_lp(fab, 1.0)
    b = fo.flow.build_symmetric_lp(one, 1.0)
    assert len(a.roots) == len(b.roots) == 1
    assert (a.lp.A_ub != b.lp.A_ub).nnz == 0 and (a.lp.A_eq != b.lp.A_eq).nnz == 0
    assert np.array_equal(a.lp.b_ub, b.lp.b_ub)
    r = certified(one, fo.max_concurrent_flow(one, method="symmetric"))
    # docs/throughput.md: the 3 x 4 torus of unit links carries theta = 1/6 (its cut
    # between the two halves of the 4-ring: 2 x 3 x 2 links against 6 x 6 pairs one way).
    assert r.theta == pytest.approx(fo.max_concurrent_flow(fab).theta, rel=1e-12)


def test_finer_orbits_than_the_groups_stay_exact():
    # Splitting an orbit (orbits of a subgroup) is sound: more roots, the same optimum.
    fab = proven_claim(unequal_leaf_spine())
    coarse = fab.symmetry
    finer = with_symmetry(fab, replace(coarse, endpoint_orbit={
        e: (10 + i if i < 3 else coarse.endpoint_orbit[e]) for i, e in
        enumerate(fab.endpoints)}))
    fo.verify_symmetry(finer)
    assert finer.symmetry.n_endpoint_orbits > coarse.n_endpoint_orbits
    a = certified(fab, fo.max_concurrent_flow(fab, method="symmetric"))
    b = certified(finer, fo.max_concurrent_flow(finer, method="symmetric"))
    assert b.theta == pytest.approx(a.theta, rel=1e-9)
    assert b.lp_size["columns"] > a.lp_size["columns"]


def test_reduced_blocks_agree_with_unreduced_and_lift_every_root():
    fab = proven_claim(fo.fat_tree(4).without_links([("leaf0", "spine0.0")]))
    model = fo.flow.build_symmetric_lp(fab, 1.0)
    plain = fo.flow.build_symmetric_lp(fab, 1.0, reduce=False)
    k = fab.symmetry.n_endpoint_orbits
    assert len(model.roots) == len(plain.roots) == k and model.reduced and not plain.reduced
    # Unreduced: one column per arc and root, plus theta. fat_tree(4) has 16 GPU, 16
    # leaf-spine and 16 spine-core links (96 arcs); one cut leaves 94.
    n_arcs = fab.graph.number_of_edges()
    assert n_arcs == 2 * 48 - 2
    assert plain.lp.n_cols == k * n_arcs + 1
    assert model.lp.n_cols < plain.lp.n_cols / 2  # 95 of 283 (measured)
    # The orbit sizes of the roots add up to the endpoints.
    assert sum(b.orbit_size for b in model.roots) == len(fab.endpoints)
    a = fo.flow.solve_lp(model.lp)
    b = fo.flow.solve_lp(plain.lp)
    assert a.objective == pytest.approx(b.objective, rel=1e-9)
    lifted = model.lift(a.x)
    assert lifted.flow.shape == (k * n_arcs,)  # every root's flow on every arc
    assert lifted.residual_l1 < 1e-6


def test_a_superpod_like_fabric_with_a_failed_uplink():
    # Two scalable units of two 8-GPU nodes, leaves oversubscribed 2:1, 5% of leaf-spine
    # links failed (one link): the GPUs of the leaf that lost it form orbits of their own.
    # The claim is the colour-refinement classes, not proven here (VF2 is too slow on the
    # NVSwitch domains): the full LP on the same fabric is the check.
    base = fo.superpod(scalable_units=2, nodes_per_su=2, leaf_radix=8, oversubscription=2)
    failed = fo.fail_random(base, 0.05, seed=1, kind="links", tiers="leaf-spine")
    assert failed.removed.physical_links == 1
    fab = refinement_claim(failed)
    assert fab.symmetry.n_endpoint_orbits > 1
    sym = certified(fab, fo.max_concurrent_flow(fab, method="symmetric"))
    full = certified(fab, fo.max_concurrent_flow(fab, method="lp"))
    assert sym.theta == pytest.approx(full.theta, rel=1e-7)
    # The failure costs throughput: below the intact fabric's (its generator's claim).
    assert sym.theta < fo.max_concurrent_flow(base).theta * (1 - 1e-3)


def test_a_wrong_claim_is_caught():
    fab = proven_claim(unequal_leaf_spine())
    # Claim transitivity: the GPUs of the leaf that lost a link are said to map onto the
    # others. VF2 finds no such automorphism, and the solve's spot check sees different
    # distance sums at the root (on leaf0) and at the last endpoint (on leaf3).
    merged = with_symmetry(fab, replace(fab.symmetry, endpoint_orbit=None))
    with pytest.raises(fo.errors.InvalidFabricError, match="no automorphism maps endpoint"):
        fo.verify_symmetry(merged)
    r = fo.max_concurrent_flow(merged, method="symmetric")
    assert r.status == "error" and r.theta is None and "spot check" in r.message


def test_verify_symmetry_checks_each_orbit_from_its_first_endpoint():
    fab = proven_claim(fo.ring(6).without_links([("n0", "n1")]))
    fo.verify_symmetry(fab)
    # Put n1 (an end of the path) in the orbit of n2 (inside it): no automorphism does that.
    wrong = dict(fab.symmetry.endpoint_orbit)
    wrong["n1"] = wrong["n2"]
    bad = with_symmetry(fab, replace(fab.symmetry, endpoint_orbit=wrong))
    with pytest.raises(fo.errors.InvalidFabricError, match="which its orbit claims"):
        fo.verify_symmetry(bad)


def test_two_phase_rate_with_several_orbits():
    fab = proven_claim(unequal_leaf_spine())
    sym = fo.valiant_rate(fab, hubs=2, method="symmetric")
    full = fo.valiant_rate(fab, hubs=2, method="lp")
    assert sym.method == "symmetric" and full.method == "lp"
    assert sym.status == full.status == "optimal"
    assert sym.rate_gbps == pytest.approx(full.rate_gbps, rel=1e-7)


def test_capacity_plan_per_orbit_with_several_orbits():
    # Relaxed plans: averaging a plan over the group keeps it feasible at the same cost, so
    # the per-orbit relaxation costs what the per-bundle one does.
    fab = proven_claim(fo.leaf_spine(4, 2, 2, links_per_pair=4).without(
        links={("leaf0", "spine0"): 3}))
    tm = fo.all_to_all(fab, gbps=10)
    orbit = fo.plan_capacity(fab, tm, target_theta=1.0, integral=False, model="orbit")
    full = fo.plan_capacity(fab, tm, target_theta=1.0, integral=False, model="full")
    assert orbit.status == full.status == "optimal"
    assert orbit.cost == pytest.approx(full.cost, rel=1e-6)
    # The integral per-orbit plan is checked on the planned fabric, which keeps the claim.
    plan = fo.plan_capacity(fab, tm, target_theta=1.0, model="orbit")
    assert plan.verified and plan.fabric.symmetry.n_endpoint_orbits > 1
    assert fo.check_certificate(plan.fabric, plan.flow, tm).ok


@pytest.mark.parametrize("collective", ["all_gather", "all_to_all"])
def test_collective_bounds_search_one_gpu_per_orbit(collective):
    # With a claim the all-gather cut search tries one missing GPU per orbit and all-to-all
    # runs the symmetric method; both must find what the claim-free fabric gives.
    raw = fo.leaf_spine(4, 2, 2, links_per_pair=2).without(links={("leaf3", "spine1"): 1})
    fab = proven_claim(raw)
    assert raw.symmetry is None and fab.symmetry.n_endpoint_orbits > 1
    a = fo.collective_bounds(fab, collective, message_bytes=1e6)
    b = fo.collective_bounds(raw, collective, message_bytes=1e6)
    assert a.lower_time_s == pytest.approx(b.lower_time_s, rel=1e-9)
    assert a.achievable_time_s == pytest.approx(b.achievable_time_s, rel=1e-9)


def test_check_certificate_re_proves_every_root_flow():
    fab = proven_claim(unequal_leaf_spine())
    r = certified(fab, fo.max_concurrent_flow(fab, method="symmetric"))
    cert = r.certificate
    k, n_arcs = fab.symmetry.n_endpoint_orbits, fab.graph.number_of_edges()
    assert cert.flow.shape == (k * n_arcs,)
    # Drop the last root's flow: its orbit's demand is no longer routed, so the conservation
    # residual no longer proves the lower bound.
    flow = cert.flow.copy()
    flow[-n_arcs:] = 0.0
    tampered = replace(r, certificate=replace(cert, lower_proof=replace(cert.lower_proof,
                                                                        flow=flow)))
    check = fo.check_certificate(fab, tampered)
    assert check.upper_ok and not check.lower_ok


@pytest.mark.parametrize("values", [np.zeros(0, dtype=np.int64), np.array([7]),
                                    np.random.default_rng(1).integers(0, 10**12, 5000),
                                    np.random.default_rng(2).integers(0, 3, 5000),
                                    np.random.default_rng(3).normal(size=300).round(1)])
def test_sorted_unique_is_numpys_unique(values):
    from fabricopt.flow.symmetric import sorted_unique

    got, want = sorted_unique(values), np.unique(values)
    assert got.dtype == want.dtype and got.tolist() == want.tolist()


def _lexsort_ids(*columns):
    """Class ids in the rows' lexicographic order, one stable multi-key sort (how
    _relabel numbered rows before it packed small columns into one key)."""
    order = np.lexsort(columns[::-1])
    rows = np.stack(columns, axis=1)[order]
    changed = np.r_[False, np.any(rows[1:] != rows[:-1], axis=1)]
    out = np.empty(len(order), dtype=np.int64)
    out[order] = np.cumsum(changed)
    return out


_RNG = np.random.default_rng(4)


@pytest.mark.parametrize("columns", [
    (_RNG.integers(0, 7000, 20000), _RNG.integers(0, 219, 20000), _RNG.integers(0, 219, 20000)),
    (_RNG.integers(0, 3, 500), _RNG.integers(-5, 5, 500)),                  # negative: lexsort
    (_RNG.integers(0, 2**40, 500), _RNG.integers(0, 2**30, 500)),           # too wide to pack
    (_RNG.integers(0, 4, 500).astype(np.uint64), _RNG.integers(0, 4, 500)),  # unsigned
    (np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)),
    (_RNG.normal(size=300).round(1),)])
def test_relabel_numbers_rows_in_lexicographic_order(columns):
    # The colour refinement's class ids, so the symmetric LP's columns, depend on this
    # numbering: packed or not, it must be the one of a multi-key sort.
    from fabricopt.flow.symmetric import _relabel

    got = _relabel(*columns)
    want = (np.unique(columns[0], return_inverse=True)[1] if len(columns) == 1
            else _lexsort_ids(*columns))
    assert got.dtype == np.int64 and got.tolist() == want.tolist()
