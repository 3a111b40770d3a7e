"""Rail-only designs in optimize's space: named, sized from their plan, bounds that hold."""

import pytest

import fabricopt as fo
from fabricopt.study.candidates import candidates, sketch

# 16 servers of 2 GPUs (one NVSwitch each) on radix-8 rail leaves: 32 GPUs, 2 rails.
DOMAIN = {"family": "nvswitch_domain", "gpus": 2, "switches": 1, "links_per_gpu": 2,
          "link_gbps": 200}
SPACE = {"family": ["rail_optimized", "clos"], "scale_up": [DOMAIN], "leaf_radix": [8],
         "oversubscription": [1.0, 2.0], "spine": [True, False]}


def test_rail_only_candidates_are_named_and_built_without_a_spine():
    found = {c.name: c for c in candidates(32, SPACE)}
    rail_only = [c for c in found.values() if not c.kwargs.get("spine", True)]
    # rail_optimized at 1:1 and 2:1 with and without a spine; a Clos has no rails, so it is
    # searched with a spine only: 2 + 2 + 2 candidates.
    assert len(found) == 6 and len(rail_only) == 2
    assert all(c.family == "rail_optimized" and " rail-only " in c.name for c in rail_only)
    fab = rail_only[0].build()
    # 16 servers > 8 ports: each rail a Clos (4 down at 1:1: 4 leaves, 2 spines per rail).
    assert not any(v.startswith("s") for v in fab.switches)  # no spine shared by rails
    assert any(str(v).startswith("r1.s") for v in fab.switches)


def test_one_leaf_per_rail_has_no_ratio_to_vary():
    # 8 servers fit one radix-8 leaf per rail: every ratio builds the same rail-only fabric,
    # searched once (at the first ratio of the space).
    names = [c.name for c in candidates(16, SPACE) if not c.kwargs.get("spine", True)]
    assert names == [n for n in names if " 1:1 " in n] and len(names) == 1


@pytest.mark.parametrize("spine", [True, False])
def test_the_sketch_bounds_hold_against_the_built_fabric(spine):
    for c in candidates(32, {**SPACE, "spine": [spine]}):
        s = sketch(c, 32)
        assert s.ok, s.reason
        fab = c.build()
        est = fo.estimate_cost(fab)
        # The plan counts every network switch, and no build costs less than its bound
        # (the NICs of GPUs in a system are in the system's price, not bounded here).
        network = [v for v in fab.switches if ".nvsw" not in str(v)]  # not the domains'

        assert s.switches == len(network), c.name
        assert s.capex_usd_bound <= est.capex_usd, c.name
        r = fo.max_concurrent_flow(fab)
        assert r.per_endpoint_gbps <= s.a2a_upper_gbps * (1 + 1e-6), c.name


def test_optimize_finds_rail_only_where_it_is_cheapest():
    # 32 servers on radix-8 rail leaves: the 16 leaves of both rails need three tiers to
    # meet under one spine layer (sketch: 32 or 40 switches), each rail's 8 leaves only two
    # on their own (20 or 24): the rail-only 2:1 design is the cheapest that carries
    # 100 Gb/s per GPU, and all-to-all keeps its rate by forwarding over NVLink to the
    # destination's rail first.
    res = fo.optimize(64, space={**SPACE, "family": ["rail_optimized"]},
                      constraints={"all_to_all_gbps_per_gpu": 100})
    assert " rail-only " in res.best["name"]
    assert all(r["outcome"] == "pruned" for r in res.rows if r is not res.best)


@pytest.mark.parametrize("spine", [[True, False], [False, True]])
def test_a_tie_goes_to_the_space_order(spine):
    # 16 servers: two tiers and 10 switches at 2:1 with or without a spine shared by the
    # rails (sketch), so both designs cost the same and carry the same all-to-all (the
    # LP's two optima differ in their last bits only): a tie, which the space's
    # first-listed value wins, not the last bits of a solve.
    res = fo.optimize(32, space={**SPACE, "family": ["rail_optimized"], "spine": spine},
                      constraints={"all_to_all_gbps_per_gpu": 100})
    by = {r["name"]: r for r in res.rows}
    pair = [by["rail_optimized nvswitch_domain r8 2:1 default"],
            by["rail_optimized nvswitch_domain r8 2:1 rail-only default"]]
    assert pair[0]["capex_usd"] == pair[1]["capex_usd"]
    assert pair[0]["all_to_all_gbps_per_gpu"] == pytest.approx(
        pair[1]["all_to_all_gbps_per_gpu"], rel=1e-9)
    assert res.best is pair[0 if spine[0] else 1]


def test_a_spine_value_must_be_a_bool():
    with pytest.raises(fo.InvalidParameterError, match=r"space\['spine'\]\[0\] must be True "
                                                       r"or False"):
        candidates(16, {**SPACE, "spine": ["no"]})
