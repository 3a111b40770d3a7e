"""A failed fabric is priced as built: its failed links and switches are installed hardware,
bought, cabled and powered, so the estimate is the intact fabric's, and says so."""

import fabricopt as fo


def _rows(est):
    return [(r.component, r.kind, r.detail, r.count, r.total_usd) for r in est.bom]


def test_failed_links_are_priced_as_built():
    intact = fo.fat_tree(8)
    failed = fo.fail_random(intact, 0.1, seed=1)
    # the certificate that links failed: fewer physical links in the failed graph
    lost = failed.removed.physical_links
    assert lost > 0
    assert sum(d.get("links", 1) for *_, d in failed.graph.edges(data=True)) < \
        sum(d.get("links", 1) for *_, d in intact.graph.edges(data=True))
    a, b = fo.estimate_cost(intact), fo.estimate_cost(failed)
    # the same bill of materials, row by row, so the same capex and power
    assert _rows(a) == _rows(b)
    assert (a.capex_usd, a.power_w) == (b.capex_usd, b.power_w)
    assert b.fabric == failed.name
    assert b.removed_parts.startswith(f"{lost} failed links priced as built")
    assert "removed  " in b.to_table()  # the printed estimate says so too
    assert a.removed_parts == ""


def test_failed_switches_are_priced_as_built():
    intact = fo.fat_tree(4)
    failed = intact.without(switches=["spine3.1", "core1.0"])
    a, b = fo.estimate_cost(intact), fo.estimate_cost(failed)
    assert _rows(a) == _rows(b)
    assert "2 failed switches priced as built" in b.removed_parts


def test_without_a_recipe_the_removed_parts_are_said_not_priced():
    # a fabric built by hand has no recipe to rebuild it intact: what is left is priced,
    # and the estimate says the removed switch is not in it
    made = fo.fat_tree(4)
    hand = fo.Fabric(made.graph.copy(), made.endpoints, "by hand")
    cut = hand.without(switches=["core1.0"])
    a, b = fo.estimate_cost(hand), fo.estimate_cost(cut)
    assert b.capex_usd < a.capex_usd  # a switch and its cables fewer
    assert b.removed_parts.startswith("1 failed switch not priced")


def test_a_recipe_that_replays_another_fabric_is_not_used():
    # A Clos cluster saved before whole-server leaves were the default: its recipe names no
    # whole_servers, so replaying it builds leaves of whole servers, not the fabric it was
    # (3 GPUs a leaf for 8 DGX on radix 16 at 2:1, servers spread, against whole DGXs).
    # That fabric is no intact twin: what is left is priced, and said not priced whole.
    base = fo.cluster(fo.dgx_h100(), nodes=8, scale_out="clos", oversubscription=2,
                      radix=16, whole_servers=False)
    failed = fo.fail_random(base, 0.03, seed=1)
    args = {k: v for k, v in failed.recipe["arguments"].items() if k != "whole_servers"}
    old = fo.Fabric(failed.graph, failed.endpoints, failed.name, params=failed.params,
                    design=failed.design, recipe={**failed.recipe, "arguments": args},
                    removed=failed.removed)
    assert old.as_built() is None  # the replay lacks arcs of this fabric
    assert failed.as_built() is not None  # its own recipe builds it intact
    est = fo.estimate_cost(old)
    assert "not priced" in est.removed_parts
    assert est.capex_usd <= fo.estimate_cost(failed).capex_usd  # less than as built
