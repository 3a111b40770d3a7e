"""The builder's bulk paths (``FabricBuilder.copies``, ``add_links`` with orbit labels, the
wiring a tier at a time) build exactly the graph that one call per copy and one
``FabricBuilder.link`` per link build: the reference here."""

from __future__ import annotations

import importlib

import pytest

import fabricopt as fo
from fabricopt.generators._builder import FabricBuilder

cluster_module = importlib.import_module("fabricopt.generators.cluster")


class OneByOne(FabricBuilder):
    """The reference: every link through :meth:`link`, every copy through :meth:`copy`."""

    def add_links(self, lower, upper, gbps, tier, tech, links=1, orbit=None):
        counts = [links] * len(lower) if isinstance(links, int) else links
        for u, v, n, base in zip(lower, upper, counts, orbit or [None] * len(lower),
                                 strict=True):
            self.link(u, v, gbps, tier, tech, links=n, orbit=base)

    def copies(self, fab, count, rename, orbit=None, attrs=lambda i: {}):
        return [self.copy(fab, lambda v, i=i: rename(i, v), orbit, **attrs(i))
                for i in range(count)]


def _everything(fab):
    """Nodes with their attributes in key order, both adjacency maps in order (arc attributes
    in key order), the endpoints, and the symmetry claim with its arc order."""
    g = fab.graph
    claim = fab._symmetry
    order = None if claim is None else claim.__dict__.get("_order")
    return (
        [(v, list(d.items())) for v, d in g._node.items()],
        [(u, [(v, list(d.items())) for v, d in nbrs.items()]) for u, nbrs in g._succ.items()],
        [(v, list(nbrs)) for v, nbrs in g._pred.items()],
        fab.endpoints, fab.name, fab.params,
        None if claim is None else (dict(claim.arc_orbit), claim.orbit_names, claim.group,
                                    claim.n_nodes, claim.n_arcs),
        None if order is None else (order.nodes, order.degrees, order.heads,
                                    order.tail.tolist(), order.head.tolist(),
                                    order.codes.tolist()))


DESIGNS = [
    "fo.superpod(2)",                                    # two tiers, equal bundles
    "fo.superpod(4, node=fo.nvswitch_domain(gpus=2, switches=1, links_per_gpu=2, "
    "link_gbps=200), nodes_per_su=2, leaf_radix=4)",     # three tiers, scaled down
    "fo.superpod(3, oversubscription=3)",                # unequal bundles, rotation orbits
    "fo.superpod(4, node=fo.nvswitch_domain(gpus=2, switches=1, links_per_gpu=2, "
    "link_gbps=200), nodes_per_su=2, leaf_radix=4, spine=False)",  # rail-only: rail Clos
    "fo.cluster(fo.dgx_h100(), nodes=12, planes=2, leaf_radix=16)",
    "fo.cluster(fo.dgx_h100(), nodes=40, leaf_radix=16, tiers=3)",
    "fo.cluster(fo.dgx_h100(), nodes=70, scale_out='clos', radix=[16, 32, 16], tiers=3, "
    "oversubscription=[2, 1])",                          # unequal spine-core bundles
    "fo.cluster(fo.gb200_nvl72(), nodes=4)",             # racks of trays
    "fo.cluster(fo.dgx_h100(), nodes=6, scale_out=None)",
]


@pytest.mark.parametrize("call", DESIGNS)
def test_bulk_build_is_the_one_link_at_a_time_build(call, monkeypatch):
    fast = eval(call)  # noqa: S307 - the calls above
    monkeypatch.setattr(cluster_module, "FabricBuilder", OneByOne)
    slow = eval(call)  # noqa: S307
    assert _everything(fast) == _everything(slow)
    # A certificate of the whole: the claim still holds on the fast graph.
    assert fast.symmetry is None or fast.symmetry.matches(fast.graph, fast.endpoints)


def test_copies_match_copy_one_by_one_even_where_names_collide():
    ring = fo.ring(3)
    fast, slow = FabricBuilder("x", {}), FabricBuilder("x", {})
    def rename(i, v):  # copies 0 and 2 share names: the later one wins, as with copy()
        return f"c{i % 2}.{v}"

    maps = fast.copies(ring, 3, rename, attrs=lambda i: {"copy": i})
    ref = [slow.copy(ring, lambda v, i=i: rename(i, v), copy=i) for i in range(3)]
    assert maps == ref
    assert list(fast.nodes.items()) == list(slow.nodes.items())
    assert list(fast.arcs.items()) == list(slow.arcs.items())
    assert list(fast.orbit.items()) == list(slow.orbit.items())
    assert fast.endpoints == slow.endpoints
    # Each arc its own attribute dict: editing one copy leaves the others.
    fast.arcs[("c0.n0", "c0.n1")]["capacity"] = 7.0
    assert fast.arcs[("c1.n0", "c1.n1")]["capacity"] == ring.graph["n0"]["n1"]["capacity"]


def test_add_links_orbit_labels_match_link():
    def made(bulk):
        b = FabricBuilder("x", {})
        b.add_nodes(["a", "b"], {"role": "switch", "layer": 1, "radix": 8})
        b.add_nodes(["x", "y"], {"role": "switch", "layer": 2, "radix": 8})
        lower, upper, counts, orbit = ["a", "a", "b"], ["x", "y", "x"], [2, 1, 3], [
            "leaf-spine:0", None, "leaf-spine:1"]
        if bulk:
            b.add_links(lower, upper, 100.0, "leaf-spine", "t", links=counts, orbit=orbit)
        else:
            OneByOne.add_links(b, lower, upper, 100.0, "leaf-spine", "t", counts, orbit)
        return list(b.arcs.items()), list(b.orbit.items())

    arcs, orbit = made(True)
    assert (arcs, orbit) == made(False)
    assert dict(orbit)[("y", "a")] == "leaf-spine:down"  # no label given: the tier's


def test_an_arc_copied_over_keeps_its_place_and_takes_the_new_label():
    # The labels sit in a list beside the arcs: a key met again (a copy whose names fall on
    # arcs already there) must be relabelled where it stands, as a dict of labels would be.
    b = FabricBuilder("x", {})
    b.add_nodes(["n0", "n1", "n2"], {"role": "gpu", "layer": 0})
    b.link("n0", "n1", 100.0, "first", "t")
    b.link("n1", "n2", 100.0, "first", "t")
    ring = fo.ring(3)
    b.copy(ring, lambda v: v, {arc: "again" for arc in ring.graph.edges})
    assert list(b.orbit)[:4] == [("n0", "n1"), ("n1", "n0"), ("n1", "n2"), ("n2", "n1")]
    assert set(b.orbit.values()) == {"again"} and len(b.orbit) == len(b.arcs) == 6
