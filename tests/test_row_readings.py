"""What a study row does to read its fabric faster, against the plain readings: the
collector's freeze, the capacity and link-count checks, the builder's direct adjacency and
the hierarchy partitions read once."""

import gc
import math
import numbers

import networkx as nx
import numpy as np
import pytest

import fabricopt as fo
from fabricopt._gc import frozen_gc
from fabricopt._unchanged import unchanged
from fabricopt.fabric import _is_capacity, is_link_count
from fabricopt.flow.bounds import hierarchy_partitions
from fabricopt.generators._builder import FabricBuilder
from fabricopt.graph_arrays import FabricShape, GraphArrays

ODD_NUMBERS = [1, 0, -1, 2, 2.5, 1.0, 0.0, -0.0, math.inf, -math.inf, math.nan, True, False,
               "1", None, np.float64(3), np.int64(0), np.int64(2), np.float32(math.nan)]


def _outcome(check, value):
    try:
        return check(value)
    except OverflowError:  # a huge int: math.isfinite cannot convert it, as before
        return OverflowError


@pytest.mark.parametrize("value", [*ODD_NUMBERS, 10**400])
def test_capacity_and_link_checks_answer_as_the_abc_checks(value):
    def capacity(cap):
        return not (isinstance(cap, bool) or not isinstance(cap, numbers.Real)
                    or not math.isfinite(cap) or cap <= 0)

    def link_count(x):
        if isinstance(x, bool) or not isinstance(x, numbers.Real):
            return False
        return math.isfinite(x) and x >= 1 and float(x).is_integer()

    assert _outcome(_is_capacity, value) == _outcome(capacity, value)
    assert _outcome(is_link_count, value) == _outcome(link_count, value)


def test_frozen_gc_nests_and_leaves_a_callers_freeze_alone():
    assert gc.get_freeze_count() == 0
    with frozen_gc():
        frozen = gc.get_freeze_count()
        with frozen_gc():  # nested: frozen once
            assert gc.get_freeze_count() == frozen
        assert gc.get_freeze_count() == frozen  # the inner block gave nothing back
    assert gc.get_freeze_count() == 0
    gc.freeze()  # a caller's own freeze (a server before fork, say)
    try:
        mine = gc.get_freeze_count()
        with frozen_gc():
            pass
        # Neither frozen again (more) nor given back (0). A frozen object that a thread left
        # by an earlier test drops meanwhile leaves the count: it may only fall a little.
        assert 0.99 * mine <= gc.get_freeze_count() <= mine
    finally:
        gc.unfreeze()


def test_builder_graph_is_what_add_edges_from_builds():
    fab = fo.cluster("dgx_h100", 2, "clos", radix=8)
    g = nx.DiGraph()
    g.add_nodes_from(fab.graph.nodes(data=True))
    g.add_edges_from(fab.graph.edges(data=True))
    assert list(g.nodes(data=True)) == list(fab.graph.nodes(data=True))
    assert list(g.edges(data=True)) == list(fab.graph.edges(data=True))
    assert dict(g.pred["n0.gpu0"]) == dict(fab.graph.pred["n0.gpu0"])


def test_builder_arc_to_a_node_never_added_adds_it():
    b = FabricBuilder("loose", {})
    b.gpu("g0")
    b.arcs[("g0", "x")] = {"capacity": 1.0}  # a generator's arc to a node it did not add
    b.arcs[("x", "g0")] = {"capacity": 1.0}
    fab = b.build()
    assert list(fab.graph.nodes) == ["g0", "x"]
    assert fab.graph["x"]["g0"] == {"capacity": 1.0} and fab.graph.has_edge("g0", "x")


def test_hierarchy_partitions_read_once_per_arrays_in_a_row():
    fab = fo.cluster("dgx_h100", 2, "clos", radix=8)
    with unchanged(fab):
        ga = GraphArrays.from_fabric(fab)
        first, again = hierarchy_partitions(fab, ga), hierarchy_partitions(fab, ga)
        assert all(a is b for a, b in zip(first, again, strict=True))
        assert not any(p.flags.writeable for p in first)
    fresh = FabricShape(fab, GraphArrays.from_fabric(fab)).hierarchy  # read anew
    assert len(fresh) == len(first)
    assert all(np.array_equal(a, b) for a, b in zip(first, fresh, strict=True))
    # The first partition leaves every node alone (an endpoint's own links).
    assert len(np.unique(first[0])) == fab.graph.number_of_nodes()


# DGX H100: NVSwitch 3 chips with 8 GPUs per domain; GB200 NVL72: NVSwitch 4 with 72; a
# ring has no NVSwitch (catalog systems by chip and domain size: cost/systems.py).
@pytest.mark.parametrize(("fab", "expected"), [
    (fo.ring(4), None), (fo.dgx_h100(), "dgx_h100"), (fo.gb200_nvl72(), "gb200_nvl72"),
    (fo.cluster("dgx_h100", 2, "clos", radix=8), "dgx_h100")], ids=lambda x: str(x)[:20])
def test_server_system_on_arrays_is_the_walks(fab, expected, monkeypatch):
    from fabricopt.cost import systems
    from fabricopt.errors import InvalidFabricError

    on_arrays = systems.server_system(fab)

    def refuse(fab):
        raise InvalidFabricError("arrays refused")  # as for a self-loop: the walk answers

    monkeypatch.setattr(systems.FabricShape, "of", refuse)
    assert on_arrays == systems.server_system(fab) == expected


def test_arrays_read_off_the_adjacency_are_the_edge_views():
    fab = fo.cluster("dgx_h100", 2, "clos", radix=8)

    class Sub(nx.DiGraph):  # not a plain DiGraph: read through g.edges(data=True)
        pass

    fast = GraphArrays._read(fab)
    viewed = GraphArrays._read(fo.Fabric(Sub(fab.graph), fab.endpoints, fab.name))
    assert fast.arcs == viewed.arcs == list(fab.graph.edges)
    assert fast.tiers == viewed.tiers
    for name in ("tail", "head", "capacity"):
        assert np.array_equal(getattr(fast, name), getattr(viewed, name))


def _odd_summary_fabric():
    g = nx.DiGraph()
    g.add_edge("a", "b", capacity=10, links=2, tech=None)   # int capacity, tech None
    g.add_edge("b", "a", capacity=10.0, tier=None)          # tier None: str "None"
    g.add_edge("b", "c", capacity=5, tier="x")              # one way: counted alone
    g.add_edge(1, "a", capacity=1.5, tier="x", links=3.0)   # an int node: reprs sort
    g.add_edge("a", 1, capacity=1.5, tier="x", links=3.0)
    return fo.Fabric(g, ["a", "c"], "odd")


@pytest.mark.parametrize("fab", [fo.ring(5), fo.superpod(1), fo.gb200_nvl72(),
                                 fo.cluster("dgx_h100", 2, "clos", radix=8),
                                 _odd_summary_fabric()], ids=lambda f: f.name)
def test_link_totals_on_arrays_are_the_arc_by_arc_totals(fab):
    from fabricopt.fabric import _link_totals, _link_totals_on_arrays

    slow, fast = _link_totals(fab), _link_totals_on_arrays(fab)
    for a, b in zip(slow[:3], fast[:3], strict=True):
        assert dict(a) == b and list(a) == list(b)  # same totals, tiers in the same order
    assert [slow[3][e] for e in fab.endpoints] == [fast[3][e] for e in fab.endpoints]


def test_odd_fabric_totals():
    # a<->b is one link (2 links, tier of the arc a->b: "link" by default); b->c alone (1
    # link); 1<->a one bundle of 3. The arc counted is the one whose ends' reprs sort first:
    # "'a'" < "'b'" and "'a'" < "1" (a quote sorts before a digit): a->b and a->1 count.
    # So "link": 2 links, 10 Gb/s, tech None; "x": 1 + 3 links, 5 + 1.5 Gb/s, no tech.
    from fabricopt.fabric import _link_totals_on_arrays

    links, capacity, techs, _ = _link_totals_on_arrays(_odd_summary_fabric())
    assert links == {"link": 2, "x": 4} and capacity == {"link": 10.0, "x": 6.5}
    assert techs == {"link": {"None"}, "x": {""}}


def test_a_self_loop_is_left_to_the_arc_by_arc_count():
    from fabricopt.fabric import _link_totals_on_arrays

    fab = fo.ring(4)
    fab.graph.add_edge("n0", "n0", capacity=1.0)
    assert _link_totals_on_arrays(fab) is None
    assert fab.summary().links_by_tier == {"ring": 4}


def _domains_by_union_find(p, red_up):
    """reduce_domains as it was: participants joined through reducing switches one arc at a
    time (union-find), grouped in the participants' order."""
    ga = p.ga
    is_gpu = np.zeros(ga.n_nodes, dtype=bool)
    is_gpu[p.gpus] = True
    to_reduce = is_gpu[ga.tail] & red_up[ga.head]
    parent = list(range(ga.n_nodes))

    def find(x):
        while parent[x] != x:
            x = parent[x]
        return x

    for a in np.flatnonzero(to_reduce):
        parent[find(int(ga.tail[a]))] = find(int(ga.head[a]))
    groups = {}
    for g in p.gpus.tolist():
        groups.setdefault(find(g), []).append(g)
    return list(groups.values())


@pytest.mark.parametrize("fab", [fo.cluster("dgx_h100", 2, "clos", radix=8), fo.gb200_nvl72(),
                                 fo.ring(4)], ids=lambda f: f.name)
def test_reduce_domains_are_the_union_finds(fab):
    from fabricopt.collectives.problem import (
        collective_problem,
        reduce_domains,
        reducing_switches,
    )

    for eps in (fab.endpoints, fab.endpoints[::-2]):  # all, and every other one backwards
        p = collective_problem(fab, eps)
        red_up = reducing_switches(p, False)[0]
        domains, _ = reduce_domains(p, red_up)
        if red_up.any():
            assert domains == _domains_by_union_find(p, red_up)
        else:
            assert domains == []  # a ring has no reducing switch
    # Two DGX H100 servers: two domains of 8 GPUs (their NVSwitches reduce).
    if fab.name.startswith("cluster"):
        p = collective_problem(fab, fab.endpoints)
        assert [len(d) for d in reduce_domains(p, reducing_switches(p, False)[0])[0]] == [8, 8]
