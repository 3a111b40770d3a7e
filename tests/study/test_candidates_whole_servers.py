"""Optimize sizes a Clos candidate as cluster() builds it (whole servers under a leaf), and
its pruning never drops a design of the cost/throughput front."""

import pytest

import fabricopt as fo
from fabricopt.study.candidates import candidates, sketch

# 2-GPU servers (one NVSwitch each), 400G NICs: as in test_optimize.
DOMAIN = {"family": "nvswitch_domain", "gpus": 2, "switches": 1, "links_per_gpu": 2,
          "link_gbps": 200}
SPACE = {"family": ["rail_optimized", "clos"], "scale_up": [DOMAIN], "leaf_radix": [4, 8],
         "oversubscription": [1.0, 2.0, 3.0]}


def _network_switches(fab: fo.Fabric) -> int:
    # Switches above the servers: every switch but the servers' own NVSwitches.
    return sum(1 for _, d in fab.graph.nodes(data=True)
               if d.get("role") == "switch" and d.get("node") is None)


@pytest.mark.parametrize("gpus, space", [
    (16, SPACE),
    # 128 DGX H100 at 1:1, 2:1, 3:1 on 64 ports: 32, 40 (five servers) and 48 (six) down:
    # 32 + 16, 26 + 9 and 22 + 6 switches (tests/cost/test_taper_preset.py).
    (1024, {"family": ["clos"], "scale_up": ["dgx_h100"], "leaf_radix": [64],
            "oversubscription": [1.0, 2.0, 3.0]}),
])
def test_a_clos_candidate_is_sized_as_it_is_built(gpus, space):
    shared: dict = {}
    seen = 0
    for c in candidates(gpus, space):
        if c.family != "clos":
            continue
        sk = sketch(c, gpus, shared)
        if not sk.ok:
            continue
        fab = c.build()
        assert sk.switches == _network_switches(fab), c.name
        seen += 1
    assert seen >= 3


def test_the_two_to_one_leaf_bound_counts_whole_servers():
    # 16 GPUs of 2-GPU servers, radix 8 at 2:1: 5 down ports hold 2 servers (4 GPUs), so 4
    # leaves of 4 GPUs and ceil(4 / 2) = 2 uplinks each. The best group cut is two leaves,
    # 8 GPUs: bw x 8 x 8 / 15 <= 2 x 2 x 400, bw <= 375; one leaf: bw x 4 x 12 / 15 <=
    # 800, bw <= 250, the bound. Leaves filled GPU by GPU would hold 5, 5 and 6 GPUs.
    c = next(c for c in candidates(16, SPACE) if c.name.startswith("clos")
             and " r8 2:1" in c.name)
    sk = sketch(c, 16)
    assert sk.a2a_upper_gbps == pytest.approx(800 * 15 / 48)
    exact = fo.max_concurrent_flow(c.build())
    assert exact.exact and exact.per_endpoint_gbps <= sk.a2a_upper_gbps * (1 + 1e-9)


def test_a_search_for_the_best_prunes_a_design_whose_bound_misses_the_target():
    # The same 3:1 Clos (plan bound 250 < 300, derived below) cannot be the best: without
    # full_front it is pruned by that bound, and the best is the unpruned search's.
    target = {"all_to_all_gbps_per_gpu": 300}
    pruned = fo.optimize(16, space=SPACE, constraints=target)
    full = fo.optimize(16, space=SPACE, constraints=target, prune=False)
    assert pruned.best["name"] == full.best["name"]
    row = next(r for r in pruned.rows if r["name"].startswith("clos") and " 3:1" in r["name"])
    assert row["outcome"] == "pruned" and row["reason"].startswith("all-to-all bound")
    assert row["all_to_all_gbps_per_gpu_bound"] < 300


@pytest.mark.parametrize("full_front", [True])
def test_a_design_under_the_target_on_the_front_is_not_pruned(full_front):
    # Target 300 Gb/s per GPU: the 3:1 Clos of radix 8 (6 down ports, 3 servers: leaves of
    # 2, 3, 3 servers, ceil(6 / 3) = 2 uplinks; a leaf of 6 GPUs sends bw x 6 x 10 / 15 over
    # 2 x 400, so bw <= 200) misses it, but it is the cheapest design: on the front, as
    # evaluating every candidate shows. Its plan bound (250, from its first leaf of 4
    # GPUs: 800 x 15 / 48) misses the target; it is evaluated all the same.
    target = {"all_to_all_gbps_per_gpu": 300}
    pruned = fo.optimize(16, space=SPACE, constraints=target, full_front=full_front)
    full = fo.optimize(16, space=SPACE, constraints=target, prune=False, full_front=full_front)
    front = [(r["name"], r["capex_usd"], r["all_to_all_gbps_per_gpu"]) for r in full.front]
    assert [(r["name"], r["capex_usd"], r["all_to_all_gbps_per_gpu"])
            for r in pruned.front] == front
    under = [r for r in pruned.front if r["all_to_all_gbps_per_gpu"] < 300]
    assert under and under[0]["name"].startswith("clos") and " 3:1" in under[0]["name"]
    assert under[0]["capex_usd"] < pruned.best["capex_usd"]
    assert under[0]["all_to_all_gbps_per_gpu"] == pytest.approx(200, rel=1e-6)
    assert under[0]["all_to_all_gbps_per_gpu_bound"] == pytest.approx(250, rel=1e-9)


def test_the_front_stops_at_the_budget():
    # A budget cuts the front: nothing dearer is bought, whatever it delivers.
    budget = {"capex_usd": 80_000.0}
    res = fo.optimize(16, space=SPACE, constraints=budget, full_front=True)
    full = fo.optimize(16, space=SPACE, constraints=budget, prune=False, full_front=True)
    assert res.front and all(r["capex_usd"] <= 80_000 for r in res.front)
    assert [r["name"] for r in res.front] == [r["name"] for r in full.front]


def test_optimize_all_names_the_build_each_default_priced_row_was_priced_by(tmp_path, capsys):
    # No policy given: each design is priced by its family's default build, which pricing
    # decides (a Clos of whole DGXs top-of-rack, a SuperPOD by its reference build); the name
    # says "default", never "reference" (the preset of that name), and the --all line names
    # the build, as the row's pricing column does.
    from fabricopt.cli import main

    search = tmp_path / "s.toml"
    search.write_text('gpus = 1024\n[space]\nfamily = ["clos", "superpod"]\n'
                      'scale_up = ["dgx_h100"]\nleaf_radix = [64]\n'
                      'oversubscription = [2.0]\n')
    assert main(["optimize", str(search), "--all", "-o", str(tmp_path / "b.toml")]) == 0
    lines = [x for x in capsys.readouterr().out.splitlines() if ": evaluated" in x
             or ": pruned" in x]
    clos = next(x for x in lines if x.startswith("clos dgx_h100 r64 2:1 default:"))
    pod = next(x for x in lines if x.startswith("superpod dgx_h100 r64 2:1 default:"))
    assert "by the top-of-rack build" in clos
    assert "by the DGX SuperPOD reference build" in pod
    assert not any(" reference:" in x for x in lines)
