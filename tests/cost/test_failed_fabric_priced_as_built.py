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
