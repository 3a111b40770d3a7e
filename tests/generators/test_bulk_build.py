"""The bulk build of three-tier Clos fabrics and the size check by the memory at hand."""

from __future__ import annotations

import pytest

import fabricopt as fo
import fabricopt._checks as checks
from fabricopt.generators._builder import FabricBuilder
from fabricopt.generators.clos import _add_gpus_and_clos
from fabricopt.generators.wiring import add_clos, check_tiers, clos_plan


def _built(endpoints, radix, oversubscription, bulk):
    radix, oversubscription = check_tiers("clos", radix, 3, oversubscription)
    plan = clos_plan("clos", endpoints, radix, 3, oversubscription)
    b = FabricBuilder("x", {})
    if bulk:
        _add_gpus_and_clos(b, plan, 400.0, "ndr", None)
    else:
        add_clos(b, [b.gpu(f"g{n}") for n in range(endpoints)], plan, 400.0, "ndr", None)
    return b.build(), b


@pytest.mark.parametrize("endpoints, radix, oversubscription", [
    (2, 2, 1.0),                     # fat_tree(2): a path through five switches
    (128, 8, 1.0),                   # fat_tree(8)
    (100, 8, 1.0),                   # uneven leaves, a partly filled pod
    (1000, 16, 3.0),                 # 3:1 leaves
    (20, [4, 6, 4], [1, 5]),         # 5:1 spines, one core per group
    (3000, [16, 24, 32], [2, 3]),    # bundles of unequal size to the cores
])
def test_bulk_three_tiers_build_what_add_clos_builds(endpoints, radix, oversubscription):
    (fast, fb), (slow, sb) = (_built(endpoints, radix, oversubscription, bulk)
                              for bulk in (True, False))
    # Same nodes, attributes (in key order), arcs, adjacency order, endpoints and orbit labels.
    assert ([(v, list(d.items())) for v, d in fast.graph.nodes(data=True)]
            == [(v, list(d.items())) for v, d in slow.graph.nodes(data=True)])
    assert list(fast.graph.edges(data=True)) == list(slow.graph.edges(data=True))
    assert list(fast.graph._pred.items()) == list(slow.graph._pred.items())
    assert fast.endpoints == slow.endpoints
    assert list(fb.orbit.items()) == list(sb.orbit.items())


def test_fat_tree_claim_holds_and_solves_to_its_closed_form():
    fab = fo.fat_tree(8, link_gbps=1.0)
    assert fab.symmetry is not None and fab.symmetry.matches(fab.graph, fab.endpoints)
    r = fo.max_concurrent_flow(fab)
    # Full bisection: every GPU's 1 Gb/s link is the bottleneck, shared by its N - 1 = 127
    # destinations (the closed form of the k-ary fat tree with its GPU links).
    assert r.theta == pytest.approx(1 / 127, rel=1e-6)
    assert fo.check_certificate(fab, r).ok


def test_add_links_falls_back_to_link_for_repeated_pairs_and_downward_links():
    b = FabricBuilder("demo", {})
    b.add_nodes(["g0", "g1"], {"role": "gpu", "layer": 0})
    b.add_nodes(["s"], {"role": "switch", "layer": 1, "radix": 4})
    b.add_links(["g0", "g0"], ["s", "s"], 100.0, "gpu-leaf", "x")       # one bundle of 2
    b.add_links(["s"], ["g1"], 100.0, "gpu-leaf", "x", links=[3])        # given top down
    assert b.arcs[("g0", "s")]["links"] == 2 and b.arcs[("g0", "s")]["capacity"] == 200.0
    assert b.arcs[("s", "g1")]["capacity"] == 300.0
    # The labels are by layer, whichever end was named first.
    assert b.orbit[("g1", "s")] == "gpu-leaf:up" and b.orbit[("s", "g1")] == "gpu-leaf:down"


def test_size_is_checked_against_the_memory_at_hand(monkeypatch):
    # fat_tree(128): 524,288 GPUs, 5 * 128**2 / 4 = 20,480 switches, 3 * 128**3 / 4 links;
    # 2.4 GB by build_bytes, so it is built where 3 GB are at hand and refused under 2 GB.
    nodes, links = 128**3 // 4 + 5 * 128**2 // 4, 3 * 128**3 // 4
    monkeypatch.setattr(checks, "memory_at_hand", lambda: (3 * 10**9, "a test's figure"))
    checks.check_size("fat_tree", nodes, links)
    monkeypatch.setattr(checks, "memory_at_hand", lambda: (2 * 10**9, "a test's figure"))
    with pytest.raises(fo.InvalidParameterError,
                       match=r"fat_tree\(\): the fabric would have 544,768 nodes and 1,572,864 "
                             r"links, about 2.43 GB .* the limit is the memory at hand, 2 GB"):
        fo.fat_tree(128)
    # Memory that cannot be read: the fixed limits of a 24 GB machine.
    monkeypatch.setattr(checks, "memory_at_hand", lambda: None)
    checks.check_size("fat_tree", nodes, links)
    with pytest.raises(fo.InvalidParameterError, match="cannot be read"):
        checks.check_size("torus", checks.MAX_NODES + 1, checks.MAX_NODES + 1)


def test_copies_are_independent_and_labelled():
    # Two copies of a 3-ring: 6 endpoints, 12 arcs, each arc's dict its own (a change to one
    # copy's capacity leaves the other and the original alone), labels by tier.
    ring = fo.ring(3)
    b = FabricBuilder("two rings", {})
    names = [b.copy(ring, lambda v, i=i: f"c{i}.{v}", copy=i) for i in range(2)]
    assert names[1] == {"n0": "c1.n0", "n1": "c1.n1", "n2": "c1.n2"}
    assert b.endpoints == ["c0.n0", "c0.n1", "c0.n2", "c1.n0", "c1.n1", "c1.n2"]
    assert b.nodes["c1.n2"] == {**ring.graph.nodes["n2"], "copy": 1}
    b.arcs[("c0.n0", "c0.n1")]["capacity"] = 99.0
    assert b.arcs[("c1.n0", "c1.n1")]["capacity"] == ring.graph["n0"]["n1"]["capacity"]
    assert ring.graph["n0"]["n1"]["capacity"] != 99.0
    tier = ring.graph["n0"]["n1"]["tier"]
    assert {b.orbit[a] for a in b.arcs} == {tier}
