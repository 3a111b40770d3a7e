"""Readings a study row now makes once and shares (issue 45, the rows' seconds): the arcs'
attribute dicts and capacity column, the reverse-arc mask, the tiers' codes, a shape's node
attributes, and NCCL's domains found without a loop per GPU. Each is checked against the
plain reading it replaces, on fabrics where the short cut could go wrong."""

import networkx as nx
import numpy as np

import fabricopt as fo
from fabricopt._unchanged import unchanged
from fabricopt.collectives.nccl import domains_of
from fabricopt.collectives.problem import collective_problem
from fabricopt.cost.systems import server_system
from fabricopt.flow.result import tier_utilization
from fabricopt.graph_arrays import FabricShape, GraphArrays, arc_dicts, looks_valid


def _one_way():
    """A ring with one arc whose reverse is gone (validation's first look must see it)."""
    fab = fo.ring(5)
    fab.graph.remove_edge("n1", "n0")
    return fab


def test_reverse_mask_is_the_arc_by_arc_answer():
    for fab in (fo.ring(4), fo.superpod(1), _one_way(),
                fo.from_networkx(nx.DiGraph([(0, 1), (1, 2), (2, 1)]), endpoints=[0, 2])):
        ga = GraphArrays.from_fabric(fab)
        arcs = set(ga.arcs)
        want = [(v, u) in arcs for u, v in ga.arcs]
        assert ga.has_reverse.tolist() == want
        if all(want):
            assert [ga.arcs[r] for r in ga.reverse.tolist()] == [(v, u) for u, v in ga.arcs]
        else:
            assert ga.reverse is None
    # The one-way ring breaks the rule: the first look hands it to the full check.
    assert looks_valid(_one_way()) is None and looks_valid(fo.ring(5)) is not None


def test_tier_codes_in_order_of_first_appearance():
    fab = fo.superpod(1)
    ga = GraphArrays.from_fabric(fab)
    codes, names = ga.tier_codes
    assert names == list(dict.fromkeys(ga.tiers))
    assert [names[c] for c in codes.tolist()] == list(ga.tiers)
    assert ga.tier_codes is ga.tier_codes  # read once per arrays


def test_tier_table_from_codes_equals_the_table_from_names():
    rng = np.random.default_rng(1)
    tiers = ["b", "a", "b", "c", "a", "a"]
    util, binding = rng.random(6), rng.random(6) > 0.5
    seen: dict[str, int] = {}
    code = np.array([seen.setdefault(t, len(seen)) for t in tiers])
    table = tier_utilization(util, tiers, binding)
    assert tier_utilization(util, tiers, binding, (code, list(seen))) == table
    assert list(table) == ["b", "a", "c"]  # in order of first appearance
    # Tier "a" is arcs 1, 4 and 5: its max and mean by hand.
    assert table["a"].max_utilization == max(util[[1, 4, 5]])
    assert table["a"].binding_arcs == int(binding[[1, 4, 5]].sum())


def test_shared_arc_dicts_and_capacities_inside_a_row_only():
    fab = fo.ring(4)
    with unchanged(fab):
        assert arc_dicts(fab) is arc_dicts(fab)
        assert [d["capacity"] for d in arc_dicts(fab)] == GraphArrays.from_fabric(
            fab).capacity.tolist()
    assert arc_dicts(fab) is not arc_dicts(fab)  # outside a row: read each time
    # A capacity that is text: the arrays name the arc, the first look defers to the full
    # check (as before the column was shared).
    bad = fo.ring(4)
    bad.graph["n0"]["n1"]["capacity"] = "400"
    with unchanged(bad):
        assert looks_valid(bad) is None
    try:
        bad.validate()
    except fo.InvalidFabricError as exc:
        assert "n0" in str(exc) and "capacity" in str(exc)
    else:
        raise AssertionError("a text capacity passed validation")


def test_shape_attributes_kept_per_key_and_default():
    fab = fo.superpod(1)
    shape = FabricShape(fab)
    nodes = list(fab.graph.nodes(data=True))
    for key, default in (("layer", None), ("layer", 0), ("layer", False), ("rail", None),
                         ("role", None), ("absent", []), ("absent", 0)):
        first = shape.attribute(key, default)
        assert first == [d.get(key, default) for _, d in nodes]
        first.append("edited")  # a caller's list is its own
        again = shape.attribute(key, default)
        assert again == [d.get(key, default) for _, d in nodes]
        assert [type(x) for x in again] == [type(d.get(key, default)) for _, d in nodes]


def _domains_by_loop(p, label):
    """The islands as domains_of grouped them before: a loop per GPU."""
    by_label: dict[int, list[int]] = {}
    for v in p.gpus:
        by_label.setdefault(int(label[v]), []).append(int(v))
    return list(by_label.values())


def test_domains_equal_the_loop_per_gpu():
    from fabricopt.collectives.parts import partition

    # A rail cluster of 8-GPU servers (NIC sums of 8) and a cluster of 2-GPU servers with
    # uneven NIC capacities (sums whose order matters in floating point).
    uneven = fo.cluster(fo.dgx_h100(), nodes=4)
    for i, (_, _, d) in enumerate(uneven.graph.edges(data=True)):
        if d["tier"] == "gpu-leaf":
            d["capacity"] = 400.0 / 3 + i % 7 / 10
    for fab in (fo.superpod(1), uneven, fo.ring(6)):
        p = collective_problem(fab, fab.endpoints)
        ga = p.ga
        no = np.zeros(ga.n_nodes, dtype=bool)
        got = domains_of(p, no, no)
        gpu = np.zeros(ga.n_nodes, dtype=bool)
        gpu[p.gpus] = True
        label = partition(ga, gpu, p.scale_up_arc, "scale-up domains").label
        groups = _domains_by_loop(p, label)
        net = ~p.scale_up_arc
        nic = np.bincount(ga.tail[net], weights=ga.capacity[net], minlength=ga.n_nodes)
        assert got.k == len(groups) and got.g == min(map(len, groups))
        assert got.domain_net_GBps == min(float(nic[d].sum()) for d in groups) / 8


def test_server_system_as_before():
    # 'hgx_h800' names the GPUs' model; a ring has no NVSwitch chips.
    assert server_system(fo.superpod(scalable_units=1)) == "dgx_h100"
    assert server_system(fo.cluster(fo.hgx_h800(), nodes=2)) == "hgx_h800"
    assert server_system(fo.ring(4)) is None


def test_default_metrics_run_with_the_collector_paused(monkeypatch):
    import gc

    from fabricopt.study import metrics

    seen = {}

    def spy(name):
        def compute(fab, ctx):
            seen[name] = gc.isenabled()
            return {}
        return metrics.Metric(name, compute, "spy")

    for name in ("summary", "routing"):
        monkeypatch.setitem(metrics.METRICS, name, spy(name))
    assert gc.isenabled()
    metrics.compute_metrics(fo.ring(4), ["summary", "routing"], metrics.MetricContext())
    # A default metric makes no reference cycles: paused; hashed routing's trials may.
    assert seen == {"summary": False, "routing": True}
    assert gc.isenabled()


def test_leaf_spine_pairs_equal_the_pair_by_pair_plan():
    from fabricopt.generators.wiring import UpperTiers

    plans = [UpperTiers(tiers=2, up=up, leaves_per_pod=0, pods=0, spines=spines,
                        spine_radix=64) for up, spines in ((4, 2), (3, 2), (7, 3), (5, 8))]
    # Unequal bundles laid out by rotations (their orbits labelled per rotation).
    plans += [p.with_rotations((2, 3)) for p in plans]
    assert any(p.starts is not None for p in plans)
    for plan in plans:
        leaves = [f"leaf{i}" for i in range(6)]
        spines = [f"spine{j}" for j in range(plan.spines)]
        pairs = [(leaf, spine, n, plan.leaf_spine_orbit(i, j))
                 for i, leaf in enumerate(leaves) for j, spine in enumerate(spines)
                 if (n := plan.leaf_spine_links_of(i, j))]
        lower, higher, counts, orbits = plan.leaf_spine_pairs(leaves, spines)
        assert list(zip(lower, higher, counts, strict=True)) == [p[:3] for p in pairs]
        assert all(type(n) is int for n in counts)
        want = [p[3] for p in pairs]
        assert orbits == (None if want.count(None) == len(want) else want)


def test_claim_orbits_kept_lazily_answer_as_a_dict():
    import pickle

    from fabricopt.symmetry_claim import ArcOrbits, Symmetry

    fab = fo.superpod(1)
    claim = fab.symmetry
    orbits = claim.arc_orbit
    assert isinstance(orbits, ArcOrbits)
    assert len(orbits) == claim.n_arcs and orbits._by_arc is None  # no dict for the count
    n_orbits = claim.n_orbits
    assert orbits._by_arc is None  # nor for the orbits' count
    as_dict = dict(orbits)
    assert n_orbits == len(set(as_dict.values()))
    assert list(orbits) == list(as_dict) == list(fab.symmetry.arc_orbit.keys())
    arc = next(iter(as_dict))
    assert orbits[arc] == as_dict[arc] and arc in orbits and ("x", "y") not in orbits
    plain = Symmetry(as_dict, claim.group, claim.n_nodes, claim.n_arcs, claim.endpoints,
                     claim.orbit_names)
    assert plain == Symmetry(orbits, claim.group, claim.n_nodes, claim.n_arcs,
                             claim.endpoints, claim.orbit_names)
    back = pickle.loads(pickle.dumps(fab))
    assert dict(back.symmetry.arc_orbit) == as_dict and back.symmetry.matches(
        back.graph, back.endpoints)


def test_link_totals_rank_odd_node_names_as_python_does():
    from fabricopt.fabric import _link_totals
    from fabricopt.graph_arrays import tier_totals

    # Names whose reprs sort differently as bytes, code points or numbers: ints, tuples,
    # text with accents and trailing spaces; each link counted once by the arc whose ends'
    # reprs sort first.
    names = [10, 9, (1, "a"), "é", "e ", "e", "Z", ("b",), -3]
    g = nx.DiGraph()
    for i, v in enumerate(names):
        g.add_node(v, role="gpu" if i % 3 == 0 else "switch", layer=0 if i % 3 == 0 else 1)
    for i, (u, v) in enumerate(zip(names, names[1:] + names[:1], strict=True)):
        g.add_edge(u, v, capacity=100.0 + i, links=1 + i % 2, tier=f"t{i % 3}", tech="x")
        # The reverse arc says another tier: which arc counts the link shows in the totals.
        g.add_edge(v, u, capacity=100.0 + i, links=1 + i % 2, tier=f"r{i % 3}", tech="x")
    fab = fo.Fabric(g, [v for i, v in enumerate(names) if i % 3 == 0], "odd names")
    got = tier_totals(fab)
    assert got == _link_totals(fab)
    assert {t[0] for t in got[0]} == {"t", "r"}  # both directions counted somewhere
    # A name longer than MAX_TEXT_RANK_WIDTH is ranked as a Python string (no fixed-width
    # text of every node at its width), with the same totals.
    from fabricopt.graph_arrays import MAX_TEXT_RANK_WIDTH
    relabel = {"Z": "Z" * (MAX_TEXT_RANK_WIDTH + 1)}
    long = fo.Fabric(nx.relabel_nodes(g, relabel), [relabel.get(v, v) for v in fab.endpoints],
                     "long names")
    assert tier_totals(long) == _link_totals(long)


def _in_server_by_loop(arcs, layout):
    """The server of each GPU coded one GPU at a time, as in_server_switches did before."""
    n = len(arcs.nodes)
    is_gpu = np.array([r in ("gpu",) for r in arcs.roles], dtype=bool)
    is_switch = np.array([r in ("switch",) for r in arcs.roles], dtype=bool)
    reach = is_switch[arcs.tail] & is_gpu[arcs.head] & arcs.in_system
    t, h = arcs.tail[reach], arcs.head[reach]
    gpus = np.bincount(t, minlength=n)
    servers, server, unnamed = {}, np.zeros(n, dtype=np.int64), np.zeros(n, dtype=bool)
    for i in np.unique(h).tolist():
        d = arcs.node_data[i]
        key = (d.get("su"), d.get("pod"), d.get("node"))
        server[i] = servers.setdefault(key, len(servers))
        unnamed[i] = key[2] is None
    any_unnamed = np.zeros(n, dtype=bool)
    any_unnamed[t[unnamed[h]]] = True
    width = max(len(servers), 1)
    distinct = np.bincount(np.unique(t * width + server[h]) // width, minlength=n)
    return frozenset(arcs.nodes[i] for i in np.flatnonzero(gpus).tolist()
                     if arcs.node_data[i].get("tray") is None
                     and ((gpus[i] <= layout.gpus_per_server) if any_unnamed[i]
                          else distinct[i] == 1))


def test_in_server_switches_and_roles_as_one_node_at_a_time():
    from fabricopt.cost.layout import Layout, _Arcs, _in_server

    # Servers named, unnamed (a DGX H100's GPUs without 'node'), a rack-scale system.
    unnamed = fo.superpod(1)
    for v in list(unnamed.graph.nodes)[:40]:
        unnamed.graph.nodes[v].pop("node", None)
    unnamed.graph.nodes[list(unnamed.graph.nodes)[41]]["role"] = None
    for fab in (fo.superpod(1), fo.dgx_h100(), fo.gb200_nvl72(), unnamed,
                fo.cluster(fo.hgx_h800(), nodes=3)):
        arcs = _Arcs.of(fab)
        for layout in (Layout(), Layout(gpus_per_server=4)):
            assert _in_server(arcs, layout) == _in_server_by_loop(arcs, layout)
        for roles in (("gpu",), ("switch", "nic"), ("nothing",), ()):
            assert arcs.role_is(*roles).tolist() == [r in roles for r in arcs.roles]
    assert len(_in_server(_Arcs.of(fo.superpod(1)), Layout())) == 32 * 4  # 4 NVSwitch chips


def test_collective_problem_reads_as_arc_by_arc():
    for fab in (fo.superpod(1), fo.gb200_nvl72(), fo.cluster(fo.hgx_h800(), nodes=3),
                fo.ring(5)):
        p = collective_problem(fab, fab.endpoints)
        ga = GraphArrays.from_fabric(fab)
        up = p.scale_up_arc
        assert p.scale_up_tiers == frozenset(np.asarray(list(ga.tiers), dtype=object)[up])
        nodes = [d for _, d in fab.graph.nodes(data=True)]
        assert p.reduce_attr.tolist() == [d.get("reduce") is True for d in nodes]
        assert p.is_switch.tolist() == [d.get("role") == "switch" for d in nodes]
    assert collective_problem(fo.superpod(1), fo.superpod(1).endpoints).scale_up_tiers == {
        "gpu-nvswitch"}


def test_dense_ids_without_a_sort_equal_the_sorted_ones():
    from fabricopt.flow.symmetric import _dense

    def by_sort(values):  # the rank of each value among the distinct ones, by a sort
        distinct = sorted(set(values.tolist()))
        return [distinct.index(v) for v in values.tolist()]

    rng = np.random.default_rng(3)
    cases = [np.array([7, 3, 7, 5]), np.array([-100, 100, -100], dtype=np.int8),
             rng.integers(-50, 50, 400), rng.integers(0, 2**40, 60),  # sparse: sorted
             np.array([2**64 - 1, 2**64 - 3, 2**64 - 1], dtype=np.uint64),
             rng.integers(0, 9, 200).astype(np.uint16), np.array([0.5, -1.5, 0.5]),
             np.array([np.iinfo(np.int64).min, np.iinfo(np.int64).max, 0])]
    for values in cases:
        got = _dense(values)
        assert got.dtype == np.int64 and got.tolist() == by_sort(values)
    assert _dense(np.array([], dtype=np.int64)).tolist() == []
