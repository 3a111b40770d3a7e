"""Fabric.origin: the generator call and what was removed, read where a failed fabric is
treated apart (answered from its intact fabric, its recipe not replayed as its own)."""

import fabricopt as fo
from fabricopt.generators.recipe import recipe_of


def test_a_generated_fabric_is_its_recipe():
    fab = fo.leaf_spine(leaves=2, spines=1, endpoints_per_leaf=2)
    o = fab.origin
    assert o.recipe == fab.recipe and o.recipe["generator"] == "leaf_spine"
    assert not o.edited and o.replayable and not o.from_recipe and not o.removed


def test_a_failed_fabric_keeps_the_intact_recipe_and_what_it_lost():
    fab = fo.leaf_spine(leaves=2, spines=1, endpoints_per_leaf=2)
    bad = fab.without(links=[("leaf0", "spine0")]).without(switches=["spine0"])
    o = bad.origin
    assert o.edited and o.from_recipe and not o.replayable
    assert o.removed.links == (("leaf0", "spine0", 1),) and o.removed.switches == ("spine0",)
    # The spelling of a release ago is still written, and read by nothing but origin.
    assert bad.params["edited"] is True


def test_a_hand_built_fabric_has_no_recipe():
    o = fo.from_networkx(fo.ring(4).graph.to_undirected()).origin
    assert o.recipe is None and not o.edited and not o.replayable and not o.from_recipe


def test_a_failed_fabric_is_not_replayed_as_an_argument():
    # A fabric-valued argument is recorded by its recipe only while that rebuilds it.
    intact, bad = fo.dgx_h100(), fo.dgx_h100().without(switches=["nvsw0"])
    assert recipe_of("cluster", fo.cluster, (intact, 2), {}) is not None
    assert recipe_of("cluster", fo.cluster, (bad, 2), {}) is None
