"""The policy-free reading of a fabric that pricing keeps (``fabricopt.cost.reading``).

The reading replaces per-arc loops over networkx views with array work and is cached per
fabric content, so these tests check it against plain references: the per-arc loops it
replaced (port use, NIC ports, bundles and their kinds, in-server switches, placement), a
fresh estimate of an uncached copy, and :meth:`Fabric.validate` on broken fabrics.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Hashable
from typing import Any

import networkx as nx
import numpy as np
import pytest

import fabricopt as fo
from fabricopt._unchanged import unchanged
from fabricopt.cost import MediaSelector, parts, place
from fabricopt.cost.layout import in_server_switches
from fabricopt.cost.reading import read_fabric
from fabricopt.generators._builder import FabricBuilder
from fabricopt.graph_arrays import looks_valid
from fabricopt.tiers import IN_SYSTEM_TIERS, is_scale_up_arc, tier_of

POLICIES = ("cost", "all_optics", "lpo")
LAYOUTS = [fo.Layout(), fo.Layout(leaf_placement="end_of_row", gpus_per_rack=16,
                                  racks_per_row=3),
           fo.Layout(leaf_placement="central", gpus_per_server=4, gpus_per_rack=8)]


def with_nics() -> fo.Fabric:
    """Two GPUs behind NIC nodes (PCIe to the GPU), one GPU with its own port, one leaf."""
    b = FabricBuilder("nics", {})
    for i in range(3):
        b.gpu(f"g{i}")
    b.switch("L0", 1, 8)
    for i in range(2):
        b.nodes[f"n{i}"] = {"role": "nic", "layer": 0, "model": "cx7"}
        b.link(f"g{i}", f"n{i}", 512, "gpu-nic", "pcie5")
        b.link(f"n{i}", "L0", 400, "gpu-leaf", "ndr")
    b.link("g2", "L0", 400, "gpu-leaf", "ndr", links=2)
    return b.build()


def fabrics() -> dict[str, fo.Fabric]:
    """Small fabrics with every kind of device and link the estimate tells apart: NVSwitch
    baseboards, NVLink Switch trays, NIC nodes, multi-link bundles, three tiers, planes."""
    return {
        "superpod(1)": fo.superpod(scalable_units=1),
        "rail 2 planes": fo.cluster("dgx_h100", nodes=8, scale_out="rail_optimized",
                                    leaf_radix=16, planes=2),
        "clos 3 tiers": fo.cluster("dgx_h100", nodes=16, scale_out="clos", radix=16, tiers=3),
        "nvl72": fo.gb200_nvl72(),
        "fat_tree(4)": fo.fat_tree(4),
        "ring(12)": fo.ring(12, link_gbps=400),
        "nics": with_nics(),
    }


def same_estimate(a: fo.CostEstimate, b: fo.CostEstimate) -> None:
    """Every figure of two estimates equal, to the last bit and in the same order."""
    for name in ("capex_usd", "power_w", "bom", "by_tier", "by_medium", "links", "cages",
                 "idle_ports", "scale_up_in_server_usd", "scale_up_in_server_w"):
        assert repr(getattr(a, name)) == repr(getattr(b, name)), name


# -- the per-arc loops the reading replaced, as references ----------------------------------------
def reference_port_use(arcs: list[dict[str, Any]]) -> tuple[list[tuple[str, int]], float, set]:
    by_tier: dict[str, int] = defaultdict(int)
    techs, rate = set(), 0.0
    for a in arcs:
        nl = int(a.get("links", 1))
        by_tier[tier_of(a)] += nl
        techs.add(str(a.get("tech", "")))
        rate = max(rate, float(a["capacity"]) / nl)
    return list(by_tier.items()), rate, techs


def reference_nic_arcs(fab: fo.Fabric, v: Hashable) -> list[dict[str, Any]] | None:
    g = fab.graph
    r = g.nodes[v].get("role")
    if r not in ("gpu", "nic"):
        return None
    arcs = [a for _, w, a in g.out_edges(v, data=True)
            if not ({r, g.nodes[w].get("role")} == {"gpu", "nic"}
                    or (r == "gpu" and is_scale_up_arc(a)))]
    if r == "gpu" and not arcs:
        return None
    return arcs


def reference_bundles(fab: fo.Fabric, lay: fo.Layout) -> Counter:
    """Physical links per (tier, tech, rate, length, in_row, section, u, v), one loop."""
    g = fab.graph
    p = place(fab, lay)
    # Scale-up silicon in the system price: a server's NVSwitch chips and a rack's NVLink
    # Switch trays (switches with a tray attribute that reach GPUs over in-system links).
    g = fab.graph
    in_server = set(in_server_switches(fab, lay)) | {
        v for v in fab.switches if g.nodes[v].get("tray") is not None and any(
            g.nodes[w].get("role") == "gpu" and tier_of(g[v][w]) in IN_SYSTEM_TIERS
            for w in g.successors(v))}
    seen, out = set(), Counter()
    for u, v, d in g.edges(data=True):
        if (v, u) in seen:
            continue
        seen.add((u, v))
        if {g.nodes[u].get("role"), g.nodes[v].get("role")} == {"gpu", "nic"}:
            continue
        i, j = p.index[u], p.index[v]
        n = int(d.get("links", 1))
        tier = tier_of(d)
        length = p.lengths_m(np.array([i]), np.array([j]), [tier], lay)[0]
        in_row = bool(p.row[i] == p.row[j] and p.row[i] >= 0 and p.rack[i] != p.rack[j])
        section = "in_server" if tier in IN_SYSTEM_TIERS and (u in in_server or v in in_server) \
            else "network"
        out[(tier, str(d.get("tech", "")), float(d["capacity"]) / n, float(length), in_row,
             section, u, v)] += n
    return out


def reference_in_server(fab: fo.Fabric, layout: fo.Layout) -> set[Hashable]:
    g = fab.graph
    out = set()
    for v in fab.switches:
        gpus = [w for w in g.successors(v) if g.nodes[w].get("role") == "gpu"
                and tier_of(g[v][w]) in IN_SYSTEM_TIERS]
        if not gpus or g.nodes[v].get("tray") is not None:
            continue
        servers = {(g.nodes[w].get("su"), g.nodes[w].get("pod"), g.nodes[w].get("node"))
                   for w in gpus}
        if any(key[2] is None for key in servers):
            if len(gpus) <= layout.gpus_per_server:
                out.add(v)
        elif len(servers) == 1:
            out.add(v)
    return out


def reference_place(fab: fo.Fabric, layout: fo.Layout) -> dict[str, Any]:
    """The placement rules of ``fabricopt.cost.layout`` node by node over networkx views."""
    g = fab.graph
    nodes = list(g.nodes)
    index = {v: i for i, v in enumerate(nodes)}
    n = len(nodes)
    role = [g.nodes[v].get("role") for v in nodes]
    endpoint_set = set(fab.endpoints)
    gpus = list(fab.endpoints) + [v for v, r in zip(nodes, role, strict=True)
                                  if r == "gpu" and v not in endpoint_set]
    nvs = nx.Graph()
    nvs.add_edges_from((u, v) for u, v, t in g.edges(data="tier") if t in IN_SYSTEM_TIERS)
    label: dict[Hashable, Any] = {}
    for comp in nx.connected_components(nvs):
        key = ("domain", min(map(repr, comp)))
        for v in comp:
            label[v] = key
    for i, v in enumerate(gpus):
        if v not in label:
            d = g.nodes[v]
            label[v] = ("node", d.get("su"), d.get("pod"), d.get("node")) \
                if d.get("node") is not None else ("chunk", i // layout.gpus_per_server)
    number: dict[Any, int] = {}
    unit_of = {v: number.setdefault(label[v], len(number)) for v in gpus}
    unit, rack = np.full(n, -1), np.full(n, -1)
    unit_size = Counter(unit_of.values())
    unit_rack, racks, fill = {}, 0, 0
    for u in sorted(unit_size):
        if racks == 0 or fill + unit_size[u] > layout.gpus_per_rack:
            racks, fill = racks + 1, 0
        unit_rack[u] = racks - 1
        fill += unit_size[u]
        if unit_size[u] > layout.gpus_per_rack:
            fill = layout.gpus_per_rack
    for v, u in unit_of.items():
        unit[index[v]], rack[index[v]] = u, unit_rack[u]
    rows = max(1, math.ceil(racks / layout.racks_per_row))
    central = (rows + 1) // 2
    row = np.where(rack >= 0, rack // layout.racks_per_row, -1)

    def row_y(r: Any) -> Any:
        return np.where(np.asarray(r) >= central, np.asarray(r) + 1, r) * layout.row_pitch_m

    x = np.where(rack >= 0, rack % layout.racks_per_row, 0).astype(float) * layout.rack_pitch_m
    y = row_y(row).astype(float)
    pending = []
    for i, v in enumerate(nodes):
        if role[i] == "gpu":
            continue
        gpu_nbrs = [w for w in g.successors(v) if g.nodes[w].get("role") == "gpu"]
        if (role[i] == "nic" or any(is_scale_up_arc(g[v][w]) for w in gpu_nbrs)) and gpu_nbrs:
            j = index[gpu_nbrs[0]]
            unit[i], rack[i], row[i], x[i], y[i] = unit[j], rack[j], row[j], x[j], y[j]
            continue
        pending.append((int(g.nodes[v].get("layer") or 0), v))
    gpu_like = {v for v, i in index.items() if rack[i] >= 0 and role[i] in ("gpu", "nic")}
    slots, row_end, next_rack, queue = 0, {}, racks, []
    for _, v in sorted(pending, key=lambda lv: lv[0]):
        i = index[v]
        nbr_racks = [int(rack[index[w]]) for w in g.successors(v) if w in gpu_like]
        if not nbr_racks or layout.leaf_placement == "central":
            queue.append(i)
            continue
        home = Counter(nbr_racks).most_common(1)[0][0]
        r = home // layout.racks_per_row
        if layout.leaf_placement == "top_of_rack":
            rack[i], row[i], x[i], y[i] = home, r, (home % layout.racks_per_row) * \
                layout.rack_pitch_m, row_y(r)
        else:
            if r not in row_end:
                row_end[r], next_rack = next_rack, next_rack + 1
            rack[i], row[i], x[i], y[i] = row_end[r], r, -layout.rack_pitch_m, row_y(r)
    for i in queue:
        k = slots // layout.switches_per_network_rack
        slots += 1
        rack[i], row[i], x[i], y[i] = next_rack + k, -1, k * layout.rack_pitch_m, \
            central * layout.row_pitch_m
    total = next_rack + math.ceil(slots / layout.switches_per_network_rack)
    return {"unit": unit.tolist(), "rack": rack.tolist(), "row": row.tolist(),
            "x_m": x.tolist(), "y_m": y.tolist(), "racks": total, "rows": rows}


# -- the reading against the references -----------------------------------------------------------
@pytest.mark.parametrize("name", list(fabrics()))
def test_port_use_matches_a_loop_over_each_nodes_arcs(name):
    # Ports per tier (in the order tiers first appear), fastest rate and techs of every node,
    # over all its arcs and over the arcs a NIC serves, as the per-node loop counts them.
    fab = fabrics()[name]
    r = read_fabric(fab, fo.Layout())
    for i, v in enumerate(r.nodes):
        by_tier, rate, techs = reference_port_use(
            [a for _, _, a in fab.graph.out_edges(v, data=True)])
        use = r.port_use[i]
        assert (list(use.by_tier.items()), use.rate_gbps, set(use.techs)) == \
            (by_tier, rate, techs)
        arcs = reference_nic_arcs(fab, v)
        if arcs is None:
            assert r.nic_port_use[i] is None
        else:
            by_tier, rate, techs = reference_port_use(arcs)
            use = r.nic_port_use[i]
            assert (list(use.by_tier.items()), use.rate_gbps, set(use.techs)) == \
                (by_tier, rate, techs)


@pytest.mark.parametrize("name", list(fabrics()))
def test_bundles_match_a_loop_over_the_arcs(name):
    # Every bundle once, with its class (tier, tech, rate per link, length, row, section) and
    # link count: the multiset equals the one a loop over the arcs builds. The link totals of
    # the kinds the estimate prices add up to the same physical links per tier.
    fab = fabrics()[name]
    for lay in LAYOUTS:
        r = read_fabric(fab, lay)
        b = r.bundles
        got = Counter()
        for u, v, n, k in zip(b.u.tolist(), b.v.tolist(), b.links.tolist(), b.kind.tolist(),
                              strict=True):
            got[(*b.classes[k], r.nodes[u], r.nodes[v])] += n
        assert got == reference_bundles(fab, lay)
        est = fo.estimate_cost(fab, layout=lay)
        per_tier = Counter()
        for key, n in got.items():
            per_tier[key[0]] += n
        assert {t: v.links for t, v in est.by_tier.items() if v.links} == dict(per_tier)


@pytest.mark.parametrize("name", list(fabrics()))
def test_placement_and_in_server_switches_match_node_by_node_rules(name):
    # The array placement puts every device where the node-by-node rules do (first GPU
    # neighbour, home rack by the most GPU-like neighbours with ties to the first met, end of
    # row and central network racks), under three layouts.
    fab = fabrics()[name]
    for lay in LAYOUTS:
        p = place(fab, lay)
        want = reference_place(fab, lay)
        got = {"unit": p.unit.tolist(), "rack": p.rack.tolist(), "row": p.row.tolist(),
               "x_m": p.x_m.tolist(), "y_m": p.y_m.tolist(), "racks": p.racks, "rows": p.rows}
        assert got == want
        assert set(in_server_switches(fab, lay)) == reference_in_server(fab, lay)


def test_switches_priced_in_groups_match_one_by_one():
    # The estimate prices alike switches once; choosing each switch alone, with the port use
    # of the per-arc loop, gives the same model for every switch and the same idle ports.
    fab = fo.cluster("dgx_h100", nodes=16, scale_out="clos", radix=16, tiers=3)
    cat = fo.Catalog.default()
    chooser = parts.DeviceChooser(cat, fo.Policy(), "estimate_cost")
    r = read_fabric(fab, fo.Layout())
    groups, group_of = parts.switch_groups(r, chooser)
    idle: dict[str, int] = defaultdict(int)
    for i, k in zip(r.switches, group_of, strict=True):
        v = r.nodes[i]
        by_tier, rate, techs = reference_port_use(
            [a for _, _, a in fab.graph.out_edges(v, data=True)])
        use = parts.PortUse(dict(by_tier), rate, frozenset(techs))
        entry = chooser.switch(v, fab.graph.nodes[v], use)
        assert entry is groups[k].entry
        modes = [(entry["radix"], entry["port_gbps"])] + list(entry.get("breakout") or ())
        offered = max((p for p, gbps in modes if gbps >= rate), default=use.used)
        idle[entry.key] += max(offered // int(entry.get("chips") or 1) - use.used, 0)
    assert fo.estimate_cost(fab, include_in_server=True).idle_ports == dict(idle)


# -- the cache ------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", list(fabrics()))
def test_cached_estimates_equal_fresh_ones(name):
    # Pricing one fabric under several policies reuses its reading; each estimate equals the
    # estimate of an uncached copy priced under that policy alone.
    fab = fabrics()[name]
    for policy in POLICIES:
        same_estimate(fo.estimate_cost(fab, policy=policy),
                      fo.estimate_cost(fab.copy(), policy=policy))


@pytest.mark.parametrize("name", list(fabrics()))
def test_estimates_in_a_study_row_equal_fresh_ones(name):
    # Inside unchanged(fab) (a comparison row, an optimizer's topology) the reading is made on
    # the fabric's arrays, kept with the block and not keyed by content; each estimate, every
    # layout and the shipped catalog's selector shared across estimates included, equals a
    # fresh estimate of an uncached copy, and the reading is one per layout in the block.
    fab = fabrics()[name]
    with unchanged(fab):
        first = read_fabric(fab, fo.Layout())
        assert read_fabric(fab, fo.Layout()) is first
        for policy in POLICIES:
            for layout in LAYOUTS:
                same_estimate(fo.estimate_cost(fab, policy=policy, layout=layout),
                              fo.estimate_cost(fab.copy(), policy=policy, layout=layout))
    assert read_fabric(fab, fo.Layout()) is not first  # the block's reading went with it


def test_reading_is_kept_per_content_and_layout():
    fab = fo.superpod(scalable_units=1)
    first = read_fabric(fab, fo.Layout())
    assert read_fabric(fab, fo.Layout()) is first           # same content, equal layout
    other = read_fabric(fab, fo.Layout(racks_per_row=4))
    assert other is not first and read_fabric(fab, fo.Layout()) is first
    assert read_fabric(fab.copy(), fo.Layout()) is not first  # another fabric


def leaf_spine_by_server() -> fo.Fabric:
    """16 GPUs in four 4-GPU servers, a leaf per two servers, two spines; no models or radix
    set, so the estimate chooses every switch from the ports its links use."""
    b = FabricBuilder("by-server", {})
    for i in range(16):
        b.gpu(f"g{i}", node=i // 4)
    for leaf in range(2):
        b.switch(f"L{leaf}", 1, None)
    for spine in range(2):
        b.switch(f"S{spine}", 2, None)
    for i in range(16):
        b.link(f"g{i}", f"L{i // 8}", 400, "gpu-leaf", "ndr")
    for leaf in range(2):
        for spine in range(2):
            b.link(f"L{leaf}", f"S{spine}", 400, "leaf-spine", "ndr", links=4)
    return b.build()


def _both(fab: fo.Fabric, u: str, v: str, **attrs: Any) -> None:
    for a, b in ((u, v), (v, u)):
        fab.graph[a][b].update(attrs)


EDITS = {
    # 400 to 800 Gb/s on one GPU's link: an 800G port at the GPU and on its leaf.
    "capacity": lambda fab: _both(fab, "g0", "L0", capacity=800.0),
    # Four more links in one leaf-spine bundle: more modules and fibres.
    "links": lambda fab: _both(fab, "L0", "S0", links=8, capacity=3200.0),
    # A leaf named as a 144-port Quantum-X800 rather than the cheapest fit.
    "model": lambda fab: fab.graph.nodes["L0"].update(model="q3400"),
    # A GPU moved into the third server, which then fills the first rack with the second:
    # the leaf of g8-g15 follows (ties go to the first rack met), its other links leave it.
    "server": lambda fab: fab.graph.nodes["g0"].update(node=2),
    # A leaf-spine bundle of another tier.
    "tier": lambda fab: _both(fab, "L0", "S0", tier="spine-core"),
    # A leaf-spine bundle removed: fewer links.
    "removed": lambda fab: fab.graph.remove_edges_from([("L1", "S1"), ("S1", "L1")]),
}


@pytest.mark.parametrize("edit", list(EDITS))
def test_a_fabric_changed_in_place_is_read_again(edit):
    # Attributes edited in place after pricing: the next estimate equals the estimate of an
    # uncached copy of the changed fabric, and differs from the one before (so a stale reading
    # would fail the first check).
    fab = leaf_spine_by_server()
    before = fo.estimate_cost(fab, layout=fo.Layout(gpus_per_rack=8))
    EDITS[edit](fab)
    after = fo.estimate_cost(fab, layout=fo.Layout(gpus_per_rack=8))
    same_estimate(after, fo.estimate_cost(fab.copy(), layout=fo.Layout(gpus_per_rack=8)))
    assert (repr(after.bom), repr(after.links)) != (repr(before.bom), repr(before.links))


@pytest.mark.parametrize("attr, value", [("capacity", -400.0), ("capacity", math.nan),
                                         ("capacity", "400"), ("links", 0), ("links", 1.5),
                                         ("links", True)])
def test_a_fabric_broken_in_place_is_validated_again(attr, value):
    # Priced once, then broken in place: the next estimate refuses it with the message of
    # Fabric.validate. links=True equals the 1 it replaces, yet is not a link count: the
    # cache compares types as well as values.
    fab = leaf_spine_by_server()
    fo.estimate_cost(fab)
    assert fab.graph["g0"]["L0"] == {"capacity": 400.0, "links": 1, "tech": "ndr",
                                     "tier": "gpu-leaf"}
    fab.graph["g0"]["L0"][attr] = value
    with pytest.raises(fo.InvalidFabricError) as want:
        fab.validate()
    with pytest.raises(fo.InvalidFabricError) as got:
        fo.estimate_cost(fab)
    assert str(got.value) == str(want.value)


def _broken() -> dict[str, fo.Fabric]:
    out = {}
    for name, (attr, value) in {"capacity 0": ("capacity", 0.0), "capacity inf":
                                ("capacity", math.inf), "capacity bool": ("capacity", True),
                                "capacity missing": ("capacity", None),
                                "links 0.5": ("links", 0.5), "links str": ("links", "2")
                                }.items():
        fab = fo.ring(4)
        fab.graph["n0"]["n1"][attr] = value
        if value is None:
            del fab.graph["n0"]["n1"][attr]
        out[name] = fab
    fab = fo.ring(4)
    fab.graph.remove_edge("n1", "n0")
    out["one direction"] = fab
    fab = fo.ring(4)
    fab.graph.add_edge("n0", "n0", capacity=1.0)
    out["self-loop"] = fab
    fab = fo.ring(4)
    fab.graph.nodes["n2"]["role"] = "router"
    out["unknown role"] = fab
    fab = fo.ring(4)
    fab.graph.nodes["n2"]["role"] = ["gpu"]
    out["unhashable role"] = fab
    fab = fo.leaf_spine(leaves=2, spines=1, endpoints_per_leaf=2)
    fab.graph.nodes["spine0"]["radix"] = 1
    out["radix exceeded"] = fab
    fab = fo.ring(4)
    fab.endpoints = (*fab.endpoints[:3],)
    fab.graph.nodes["n3"]["role"] = "switch"
    fab.endpoints = (*fab.endpoints, "n3")
    out["endpoint not a gpu"] = fab
    return out


@pytest.mark.parametrize("name", list(_broken()))
def test_array_validation_defers_every_broken_fabric_to_validate(name):
    # The array check passes a fabric only when Fabric.problems finds nothing; every broken
    # fabric here fails it, and the estimate raises what validate raises.
    fab = _broken()[name]
    assert fab.problems() and looks_valid(fab) is None
    with pytest.raises(fo.InvalidFabricError) as want:
        fab.validate()
    with pytest.raises(fo.InvalidFabricError) as got:
        fo.estimate_cost(fab)
    assert str(got.value) == str(want.value)


@pytest.mark.parametrize("name", list(fabrics()))
def test_array_validation_passes_valid_fabrics(name):
    fab = fabrics()[name]
    assert not fab.problems() and looks_valid(fab) is not None


@pytest.mark.parametrize("name", ["superpod(1)", "rail 2 planes", "nvl72"])
@pytest.mark.parametrize("policy", ["cost", "lpo"])
def test_cages_match_a_loop_over_the_bundles(name, policy):
    # The cages each switch's modules and cable ends take, added bundle by bundle (end u then
    # end v) as a loop would, with each switch's model chosen alone: equal to the last bit
    # to the ledger the estimate keeps by array sums.
    fab = fabrics()[name]
    cat, pol = fo.Catalog.default(), fo.Policy.coerce(policy)
    chooser = parts.DeviceChooser(cat, pol, "estimate_cost")
    selector = MediaSelector(cat, pol)
    models = {}
    for v in fab.switches:
        by_tier, rate, techs = reference_port_use(
            [a for _, _, a in fab.graph.out_edges(v, data=True)])
        models[v] = chooser.switch(v, fab.graph.nodes[v],
                                   parts.PortUse(dict(by_tier), rate, frozenset(techs)))
    ends = {v: parts.end_kind(entry) for v, entry in models.items()}
    used: dict[Hashable, float] = defaultdict(float)
    for (tier, tech, rate, length, in_row, _, u, v), n in reference_bundles(
            fab, fo.Layout()).items():
        lm = selector.choose(rate, length, tech, tier, (ends.get(u), ends.get(v)), in_row)
        for end, w in enumerate((u, v)):
            if w in models:
                used[w] += n * parts.cage_use(lm, end, rate, ends[w])
    want = {v: (used.get(v, 0.0), e["cages"] / int(e.get("chips") or 1))
            for v, e in models.items() if e.get("cages")}
    assert fo.estimate_cost(fab, policy=policy).cages == want


def test_idle_ports_leave_out_in_server_silicon_unless_included():
    # superpod(1): 32 DGX H100, each with 4 NVSwitch chips of 64 NVLink4 ports; its 8 GPUs
    # use 18 links each (5 + 4 + 4 + 5 over the chips), 144 of the 256 ports. The spare 112
    # per server serve its own cages: not idle switch ports bought, unless in-server silicon
    # is counted, when 32 x 112 = 3,584 are.
    fab = fo.superpod(1)
    assert "nvswitch3" not in fo.estimate_cost(fab).idle_ports
    assert fo.estimate_cost(fab, include_in_server=True).idle_ports["nvswitch3"] == 3584
