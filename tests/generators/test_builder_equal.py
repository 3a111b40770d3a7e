"""The builder's array-first path (arcs kept as runs of node positions, networkx's adjacency
assembled in bulk, the claim's graph order made from the same arrays) builds exactly the
fabric the slow, obvious way builds: every arc through the dict ``arcs`` one key at a time,
the graph made by ``add_nodes_from`` and ``add_edges_from``, the claim's order found by
``ClaimOrder.of``. Checked on every design of ``topologies/`` and every generator of
``fo.GENERATORS`` at a few sizes: nodes, arcs, every attribute, their orders, the endpoints
and the symmetry claim."""

from __future__ import annotations

import importlib
from pathlib import Path

import networkx as nx
import numpy as np
import pytest

import fabricopt as fo
from fabricopt._gc import paused_gc
from fabricopt.generators._builder import FabricBuilder
from fabricopt.io.design_files import load_design
from fabricopt.symmetry_claim import ClaimOrder, Symmetry

TOPOLOGIES = sorted((Path(__file__).resolve().parents[2] / "topologies").glob("*.toml"))
#: Every module that makes a FabricBuilder (the reference replaces it in each).
BUILDING = [importlib.import_module(f"fabricopt.generators.{m}")
            for m in ("classic", "clos", "cluster", "rail", "scaleup")]


class Obvious(FabricBuilder):
    """The reference: the arcs a dict from the start (every bulk call takes the builder's
    dict path: ``link`` per pair, or ``dict.update`` when every pair is new), and the graph
    made by networkx's own ``add_nodes_from`` and ``add_edges_from``."""

    def __init__(self, name, params):
        super().__init__(name, params)
        self._as_dict()  # no runs: every arc goes into the dict as it is added

    def build(self, symmetric=False, group=""):
        g = nx.DiGraph()
        g.add_nodes_from(self.nodes.items())
        g.add_edges_from((u, v, d) for (u, v), d in self.arcs.items())
        symmetry = None
        if symmetric:
            names = sorted(set(self._arc_orbits))
            codes = [names.index(x) for x in self._arc_orbits]
            symmetry = Symmetry(dict(zip(self.arcs, codes, strict=True)), group,
                                g.number_of_nodes(), g.number_of_edges(),
                                frozenset(self.endpoints), tuple(names))
            order = ClaimOrder.of(g, list(self.arcs), np.array(codes, dtype=np.int64))
            if order is not None:
                object.__setattr__(symmetry, "_order", order)
        return fo.Fabric(g, self.endpoints, self.name, self.params, symmetry)


def same_in_order(a, b):
    """True when the mappings ``a`` and ``b`` have the same keys in the same order and equal
    values, their keys' order within each value too (values are dicts: attributes)."""
    return (list(a) == list(b) and a == b
            and all(list(x) == list(y) for x, y in zip(a.values(), b.values(), strict=True)))


def assert_everything_same(fast, slow):
    """Nodes with their attributes, both adjacency maps (each arc's attributes too), all in
    order, the endpoints, name, parameters and recipe, and the claim with its arcs in order
    and its graph order."""
    f, s = fast.graph, slow.graph
    assert same_in_order(f._node, s._node)
    for side in ("_succ", "_pred"):
        mine, theirs = getattr(f, side), getattr(s, side)
        assert list(mine) == list(theirs)
        assert all(same_in_order(x, y) for x, y in zip(mine.values(), theirs.values(),
                                                       strict=True)), side
    assert (fast.endpoints, fast.name, fast.params, fast.recipe) == (
        slow.endpoints, slow.name, slow.params, slow.recipe)
    claims = [fab._symmetry for fab in (fast, slow)]
    assert (claims[0] is None) == (claims[1] is None)
    if claims[0] is None:
        return
    one, two = claims
    assert list(one.arc_orbit.items()) == list(two.arc_orbit.items())
    assert (one.orbit_names, one.group, one.n_nodes, one.n_arcs, one.endpoints,
            one.endpoint_orbit) == (two.orbit_names, two.group, two.n_nodes, two.n_arcs,
                                    two.endpoints, two.endpoint_orbit)
    orders = [c.__dict__.get("_order") for c in claims]
    assert (orders[0] is None) == (orders[1] is None)
    if orders[0] is not None:
        x, y = orders
        assert (x.nodes, x.degrees, x.heads) == (y.nodes, y.degrees, y.heads)
        for name in ("tail", "head", "codes"):
            assert np.array_equal(getattr(x, name), getattr(y, name)), name


def both(make, monkeypatch):
    """``make()`` built by the builder, then by the reference."""
    with paused_gc():  # millions of objects: the collector's passes would be most of the test
        fast = make()
        with monkeypatch.context() as m:
            for module in BUILDING:
                m.setattr(module, "FabricBuilder", Obvious)
            slow = make()
    return fast, slow


def assert_same(fast, slow):
    fast, slow = (f if isinstance(f, list) else [f] for f in (fast, slow))
    assert len(fast) == len(slow)
    for a, b in zip(fast, slow, strict=True):
        with paused_gc():
            assert_everything_same(a, b)
        g = a.graph
        # As networkx keeps them: one dict per arc, shared by its successor and predecessor
        # entries, none shared between arcs (editing one arc edits no other).
        dicts = [d for nbrs in g._succ.values() for d in nbrs.values()]
        assert len({id(d) for d in dicts}) == len(dicts) == g.number_of_edges()
        assert all(g._pred[v][u] is d for u, nbrs in g._succ.items() for v, d in nbrs.items())
        # A certificate of the claim on the graph built: it still matches it.
        assert a.symmetry is None or a.symmetry.matches(g, a.endpoints)


@pytest.mark.parametrize("path", TOPOLOGIES, ids=lambda p: p.stem)
def test_every_design_file_builds_as_the_obvious_way_builds(path, monkeypatch):
    assert_same(*both(lambda: load_design(path), monkeypatch))


#: Each generator at a few sizes (the smallest as tests/generators/test_every_generator.py
#: has it, then larger or with other options).
SIZES = {
    "ring": [{"n": 3}, {"n": 6}],
    "torus": [{"dims": (3, 4)}, {"dims": (2, 3, 4)}],
    "hypercube": [{"d": 3}, {"d": 5}],
    "complete": [{"n": 5}, {"n": 9}],
    "dragonfly": [{"a": 2, "h": 1, "p": 2}, {"a": 4, "h": 2, "p": 2}],
    "jellyfish": [{"switches": 8, "network_ports": 3, "endpoints_per_switch": 2, "seed": 1},
                  {"switches": 20, "network_ports": 4, "endpoints_per_switch": 3, "seed": 2}],
    "fat_tree": [{"k": 4}, {"k": 8}],
    "clos": [{"endpoints": 24, "radix": 8}, {"endpoints": 96, "radix": 8, "tiers": 3},
             {"endpoints": 64, "radix": 16, "oversubscription": 3}],
    "leaf_spine": [{"leaves": 3, "spines": 2, "endpoints_per_leaf": 4},
                   {"leaves": 6, "spines": 3, "endpoints_per_leaf": 2, "links_per_pair": 2}],
    "rail_optimized": [{"nodes": 4, "gpus_per_node": 2, "leaf_radix": 4},
                       {"nodes": 16, "gpus_per_node": 8, "leaf_radix": 16}],
    "nvswitch_domain": [{"gpus": 4, "switches": 2, "links_per_gpu": 4, "link_gbps": 200},
                        {"gpus": 8, "switches": 4, "links_per_gpu": 18, "link_gbps": 50}],
    "dgx_a100": [{}], "dgx_h100": [{}], "hgx_h800": [{}], "dgx_h200": [{}], "dgx_b200": [{}],
    "gb200_nvl72": [{}],
    "nvlink_switch_system": [{"nodes": 2}, {"nodes": 4}],
    "nvl576": [{"racks": 2, "gpus_per_rack": 4, "switches_per_rack": 2}],
    "ualink_pod": [{"accelerators": 8, "switches": 2, "ports_per_accelerator": 2},
                   {"accelerators": 32, "switches": 4, "ports_per_accelerator": 4}],
    "cluster": [{"scale_up": "dgx_h100", "nodes": 12, "planes": 2, "leaf_radix": 16},
                {"scale_up": "dgx_h100", "nodes": 40, "leaf_radix": 16, "tiers": 3},
                {"scale_up": "dgx_h100", "nodes": 70, "scale_out": "clos",
                 "radix": [16, 32, 16], "tiers": 3, "oversubscription": [2, 1]},
                {"scale_up": "gb200_nvl72", "nodes": 4},
                {"scale_up": "dgx_h100", "nodes": 6, "scale_out": None}],
    "superpod": [{"scalable_units": 1}, {"scalable_units": 3, "oversubscription": 3},
                 {"scalable_units": 4, "nodes_per_su": 2, "leaf_radix": 4, "spine": False}],
}


def test_every_generator_has_sizes_here():
    assert set(fo.GENERATORS) <= set(SIZES), set(fo.GENERATORS) - set(SIZES)


@pytest.mark.parametrize(("name", "kwargs"),
                         [(n, k) for n, sizes in SIZES.items() for k in sizes],
                         ids=lambda x: x if isinstance(x, str) else "")
def test_every_generator_builds_as_the_obvious_way_builds(name, kwargs, monkeypatch):
    if name not in fo.GENERATORS:
        pytest.skip(f"{name} is not registered")
    assert_same(*both(lambda: fo.GENERATORS[name](**kwargs), monkeypatch))


def scripted(builder):
    """A builder driven through every path: runs, a bulk call over arcs already there (a
    bundle grows), copies whose names fall on nodes already there, a read of ``arcs`` in
    the middle, then runs again on the dict."""
    b = builder("script", {})
    b.add_nodes([f"g{i}" for i in range(4)], {"role": "gpu", "layer": 0})
    b.add_nodes(["s0", "s1"], {"role": "switch", "layer": 1, "radix": 8})
    b.add_links(["g0", "g1", "g2", "g3"], ["s0", "s0", "s1", "s1"], 100.0, "gpu-leaf", "t")
    b.add_nodes(["top"], {"role": "switch", "layer": 2, "radix": 8})
    b.add_links(["s0", "s1"], ["top", "top"], 100.0, "leaf-spine", "t", links=[2, 3],
                orbit=["a", None])
    b.add_links(["s0"], ["top"], 100.0, "leaf-spine", "t")  # there already: the bundle grows
    b.copies(fo.ring(3), 2, lambda i, v: f"r{i}.{v}", attrs=lambda i: {"copy": i})
    b.copies(fo.ring(3), 2, lambda i, v: f"r{i + 1}.{v}")  # r1.* there already
    seen = len(b.arcs)  # read in the middle: the dict holds the arcs from here
    b.add_nodes(["x"], {"role": "switch", "layer": 1, "radix": 8})
    b.add_links(["g0"], ["x"], 100.0, "gpu-leaf", "t")
    b.endpoints = list(dict.fromkeys(b.endpoints))  # the copies over r1.* named them again
    return b, seen


@pytest.mark.parametrize("symmetric", [False, True])
def test_every_path_of_the_builder_builds_as_the_obvious_way(symmetric):
    (fast, seen), (slow, seen_slow) = scripted(FabricBuilder), scripted(Obvious)
    assert seen == seen_slow
    assert list(fast.arcs.items()) == list(slow.arcs.items())
    assert list(fast.orbit.items()) == list(slow.orbit.items())
    # The bundle s0-top: 2 links, then 1 more (100 Gb/s each).
    assert fast.arcs[("s0", "top")]["links"] == 3 and fast.arcs[("top", "s0")]["capacity"] == 300
    assert_same(fast.build(symmetric, "g"), slow.build(symmetric, "g"))


@pytest.mark.parametrize("symmetric", [False, True])
def test_runs_alone_build_as_the_obvious_way(symmetric):
    def made(builder):
        b = builder("runs", {})
        b.copies(fo.dgx_h100(), 3, lambda i, v: f"n{i}.{v}", attrs=lambda i: {"node": i})
        gpus = [v for v in b.nodes if b.nodes[v]["role"] == "gpu"]
        b.add_nodes(["l0", "l1"], {"role": "switch", "layer": 2, "radix": 16})
        b.add_links(gpus, ["l0", "l1"] * 12, 400.0, "gpu-leaf", "ndr")
        b.add_nodes(["sp"], {"role": "switch", "layer": 3, "radix": 16})
        b.add_links(["l0", "l1"], ["sp", "sp"], 400.0, "leaf-spine", "ndr", links=4)
        return b

    fast = made(FabricBuilder)
    assert fast._runs is not None and len(fast._runs) == 3  # never turned into the dict
    assert_same(fast.build(symmetric, "g"), made(Obvious).build(symmetric, "g"))


def test_a_pair_twice_in_one_call_is_one_bundle():
    def made(builder):
        b = builder("twice", {})
        b.add_nodes(["g0"], {"role": "gpu", "layer": 0})
        b.add_nodes(["s"], {"role": "switch", "layer": 1, "radix": 8})
        b.add_links(["g0", "g0"], ["s", "s"], 100.0, "gpu-leaf", "t")
        return b

    fast = made(FabricBuilder)
    assert fast.arcs[("g0", "s")] == {"capacity": 200.0, "links": 2, "tech": "t",
                                      "tier": "gpu-leaf"}  # two links of 100 Gb/s
    assert_same(fast.build(True), made(Obvious).build(True))


def test_an_arc_to_a_node_never_added_is_added_as_networkx_adds_it():
    b = FabricBuilder("loose", {})
    b.add_nodes(["g0"], {"role": "gpu", "layer": 0})
    b.arcs[("g0", "x")] = {"capacity": 1.0}
    b.arcs[("x", "g0")] = {"capacity": 1.0}
    fab = b.build()
    assert list(fab.graph.nodes) == ["g0", "x"] and fab.graph["x"]["g0"] == {"capacity": 1.0}


def test_a_link_to_a_node_never_added_is_refused_as_before():
    b = FabricBuilder("loose", {})
    b.add_nodes(["g0"], {"role": "gpu", "layer": 0})
    with pytest.raises(KeyError):
        b.add_links(["g0"], ["nowhere"], 1.0, "gpu-leaf", "t")
