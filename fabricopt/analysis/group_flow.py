"""Maximum flow between two named groups of nodes, its minimum cut and each cut link's
sensitivity, certified.

How much can the GPUs of one scalable unit send to another's, all at once, when nothing else
runs? :func:`group_max_flow` answers with a single-commodity maximum flow from every node of
one group (picked by name pattern or attribute conditions, :mod:`fabricopt.analysis.selection`)
to every node of the other, on the fabric's capacities (Gb/s per direction), and proves it:

- **the flow** (a feasible flow: conservation at every node outside the groups, every arc
  within its capacity) shows the value is reached;
- **the cut** (the arcs leaving the set of nodes the residual network still reaches from the
  sources) shows nothing more can pass: every path from the sources to the sinks crosses it,
  and its capacity equals the flow's value. :meth:`GroupFlow.check` re-proves both from the
  fabric.

**Sensitivity of each cut link.** Losing one physical link of a cut bundle of ``n`` links and
capacity ``c`` lowers the maximum flow by exactly ``c / n``: the cut less that link is still a
cut (so the flow can be at most ``F - c / n``), and the flow less what crossed that link is
still a flow (the cut's arcs are saturated, so exactly ``c / n`` of it is lost). Losing the
whole bundle lowers it by ``c``. Doubling the bundle's capacity raises it by the maximum flow
of the residual network with ``c`` more on that arc (0 when another minimum cut avoids it:
the bundle is not the only bottleneck): computed, one maximum flow per bundle, for the first
``gain_limit`` bundles of the cut.

Traffic may transit any node, GPUs included (a GPU's NVLink reaches its server's other NICs,
as PXN routing uses them); ``transit_gpus=False`` keeps GPUs outside the two groups out of
the paths.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Hashable
from dataclasses import dataclass, field
from typing import Any

import networkx as nx

from .._checks import check_bool, check_int, fail
from ..fabric import Fabric, check_fabric, format_gbps
from .selection import describe, select_nodes

__all__ = ["CutLink", "GroupFlow", "group_max_flow"]

_SOURCE = ("fabricopt", "group source")
_SINK = ("fabricopt", "group sink")
#: Relative tolerance of the certificate: flows from a push-relabel solver in floating point.
TOLERANCE = 1e-9


@dataclass(frozen=True)
class CutLink:
    """One bundle of the minimum cut, in the direction the flow crosses it.

    ``loss_one_link_gbps``: how much the maximum flow drops when one of its ``links`` physical
    links fails (exactly ``capacity_gbps / links``); ``loss_gbps``: when the whole bundle
    fails (exactly ``capacity_gbps``); ``gain_if_doubled_gbps``: how much it rises when the
    bundle's capacity doubles (None where not computed).
    """

    tail: Hashable
    head: Hashable
    tier: str
    capacity_gbps: float
    links: int
    loss_one_link_gbps: float
    loss_gbps: float
    gain_if_doubled_gbps: float | None


@dataclass
class GroupFlow:
    """What :func:`group_max_flow` returns.

    Attributes
    ----------
    value_gbps : float
        The maximum flow from the source group to the sink group (Gb/s, per direction).
    cut_gbps : float
        Capacity of the minimum cut found; equal to ``value_gbps`` (max-flow min-cut), which
        :meth:`check` proves.
    cut : tuple of CutLink
        The cut's bundles, largest capacity first.
    sources, sinks : tuple
        The nodes of each group.
    source_side : frozenset
        The nodes on the sources' side of the cut.
    flow : dict
        Gb/s on each arc ``(u, v)`` that carries flow.
    """

    fabric_name: str
    sources: tuple[Hashable, ...]
    sinks: tuple[Hashable, ...]
    source_label: str
    sink_label: str
    value_gbps: float
    cut_gbps: float
    cut: tuple[CutLink, ...]
    source_side: frozenset[Hashable]
    flow: dict[tuple[Hashable, Hashable], float] = field(repr=False)
    transit_gpus: bool = True
    gains_left_out: int = 0
    seconds: float = 0.0

    @property
    def exact(self) -> bool:
        """Whether the cut's capacity meets the flow's value (to :data:`TOLERANCE`)."""
        return abs(self.cut_gbps - self.value_gbps) <= TOLERANCE * max(1.0, self.value_gbps)

    def check(self, fab: Fabric) -> list[str]:
        """Re-prove the answer from ``fab``: the flow is feasible (capacities, conservation
        outside the groups, nothing into a source or out of a sink on balance) and of the
        value claimed; the cut separates the groups (no path from a source to a sink avoids
        it) and its capacity equals the value. Returns the problems found (empty: proven).

        >>> import fabricopt as fo
        >>> fab = fo.leaf_spine(leaves=2, spines=2, endpoints_per_leaf=2)
        >>> r = group_max_flow(fab, "g0", "g3")
        >>> r.check(fab), r.check(fo.leaf_spine(leaves=2, spines=2, endpoints_per_leaf=2,
        ...                                     link_gbps=100))[0]
        ([], 'flow 400 on g0->leaf0 outside [0, 100]')
        """
        check_fabric("GroupFlow.check", fab)
        g = fab.graph
        problems = []
        tol = TOLERANCE * max(1.0, self.value_gbps)
        net: dict[Hashable, float] = {}
        for (u, v), f in self.flow.items():
            if not g.has_edge(u, v):
                problems.append(f"flow on {u}->{v}, which is no arc")
                continue
            cap = float(g[u][v].get("capacity", 0.0))
            if f < -tol or f > cap + tol:
                problems.append(f"flow {f:g} on {u}->{v} outside [0, {cap:g}]")
            net[u] = net.get(u, 0.0) - f
            net[v] = net.get(v, 0.0) + f
        src, snk = set(self.sources), set(self.sinks)
        for v, balance in net.items():
            if v not in src and v not in snk and abs(balance) > tol:
                problems.append(f"flow not conserved at {v} ({balance:+g} Gb/s)")
        sent = -sum(net.get(s, 0.0) for s in src)
        if abs(sent - self.value_gbps) > tol:
            problems.append(f"the flow sends {sent:g} Gb/s, not {self.value_gbps:g}")
        cut_arcs = {(c.tail, c.head) for c in self.cut}
        cut_cap = sum(float(g[u][v].get("capacity", 0.0)) for u, v in cut_arcs
                      if g.has_edge(u, v))
        if abs(cut_cap - self.value_gbps) > tol:
            problems.append(f"the cut holds {cut_cap:g} Gb/s, the flow {self.value_gbps:g}")
        seen = set(src)
        gpus = set(fab.endpoints)
        queue = deque(src)
        while queue:  # every path from a source must cross the cut
            u = queue.popleft()
            for v in g.successors(u):
                if v in seen or (u, v) in cut_arcs:
                    continue
                if not self.transit_gpus and v in gpus and v not in snk:
                    continue
                if v in snk:
                    problems.append(f"{v} is reached from the sources around the cut")
                    return problems
                seen.add(v)
                queue.append(v)
        return problems

    def to_records(self) -> list[dict[str, Any]]:
        """The cut's bundles as rows."""
        return [{"tail": str(c.tail), "head": str(c.head), "tier": c.tier,
                 "capacity_gbps": c.capacity_gbps, "links": c.links,
                 "loss_one_link_gbps": c.loss_one_link_gbps, "loss_gbps": c.loss_gbps,
                 "gain_if_doubled_gbps": c.gain_if_doubled_gbps} for c in self.cut]

    def __str__(self) -> str:
        lines = [f"max flow {self.source_label} -> {self.sink_label} on {self.fabric_name}: "
                 f"{format_gbps(self.value_gbps)} ({len(self.sources):,} source and "
                 f"{len(self.sinks):,} sink nodes; "
                 f"{format_gbps(self.value_gbps / len(self.sources))} per source)",
                 f"  minimum cut    {len(self.cut):,} bundle(s), "
                 f"{sum(c.links for c in self.cut):,} links, {format_gbps(self.cut_gbps)}"
                 f" ({'= the flow: proven' if self.exact else 'NOT equal to the flow'})"]
        tiers: dict[str, list[CutLink]] = {}
        for c in self.cut:
            tiers.setdefault(c.tier, []).append(c)
        for tier, links in tiers.items():
            lines.append(f"  cut in {tier}: {len(links):,} bundle(s), "
                         f"{format_gbps(sum(c.capacity_gbps for c in links))}")
        lines.append("  sensitivity    (one link lost / bundle lost / bundle doubled)")
        for c in self.cut[:12]:
            gain = "not computed" if c.gain_if_doubled_gbps is None else \
                f"+{format_gbps(c.gain_if_doubled_gbps)}"
            lines.append(f"    {c.tail} -> {c.head} ({c.tier}, {c.links} x "
                         f"{format_gbps(c.capacity_gbps / c.links)}): "
                         f"-{format_gbps(c.loss_one_link_gbps)} / -{format_gbps(c.loss_gbps)}"
                         f" / {gain}")
        if len(self.cut) > 12:
            lines.append(f"    ... {len(self.cut) - 12} more (to_records() lists them all)")
        if self.gains_left_out:
            lines.append(f"  note: the gain of doubling was computed for the first bundles "
                         f"only; {self.gains_left_out} left out (gain_limit)")
        return "\n".join(lines)


def _network(fab: Fabric, sources: list[Hashable], sinks: list[Hashable],
             transit_gpus: bool) -> nx.DiGraph:
    """The fabric's arcs with their capacities, a super source before the sources and a
    super sink after the sinks (arcs without a capacity: unbounded)."""
    g = fab.graph
    keep = None
    if not transit_gpus:
        ends = set(sources) | set(sinks)
        gpus = set(fab.endpoints)
        keep = {v for v in g if v not in gpus or v in ends}
    net = nx.DiGraph()
    for u, v, d in g.edges(data=True):
        if keep is None or (u in keep and v in keep):
            net.add_edge(u, v, capacity=float(d.get("capacity", 0.0)))
    net.add_nodes_from(sources + sinks)
    net.add_edges_from((_SOURCE, s) for s in sources)
    net.add_edges_from((t, _SINK) for t in sinks)
    return net


def _residual(net: nx.DiGraph, flows: dict) -> nx.DiGraph:
    """The residual network of a maximum flow (arcs with room left; super arcs unbounded)."""
    residual = nx.DiGraph()
    tol = TOLERANCE
    for u, v, d in net.edges(data=True):
        if u == _SOURCE or v == _SINK:
            residual.add_edge(u, v)
            continue
        back = flows.get(v, {}).get(u, 0.0) if net.has_edge(v, u) else 0.0
        room = d["capacity"] - flows[u][v] + back
        if room > tol:
            residual.add_edge(u, v, capacity=room)
    return residual


def _gains(net: nx.DiGraph, flows: dict, arcs: list[tuple[Hashable, Hashable]]
           ) -> list[float]:
    """How much more can flow when each arc's capacity doubles: the maximum flow of the
    residual network with that much more on the arc. Every new path must use the arc (the
    residual network has none from the sources to the sinks), so an arc whose head no longer
    reaches the sinks in the residual network gains nothing, without a flow."""
    residual = _residual(net, flows)
    reach = set(nx.ancestors(residual, _SINK)) | {_SINK} if _SINK in residual else set()
    out = []
    for u, v in arcs:
        if v not in reach:
            out.append(0.0)
            continue
        extra = net[u][v]["capacity"]
        had = residual.get_edge_data(u, v)
        residual.add_edge(u, v, capacity=(had["capacity"] if had else 0.0) + extra)
        out.append(float(nx.maximum_flow_value(residual, _SOURCE, _SINK,
                                               flow_func=nx.algorithms.flow.preflow_push)))
        if had:
            residual[u][v]["capacity"] = had["capacity"]
        else:
            residual.remove_edge(u, v)
    return out


def group_max_flow(fab: Fabric, sources: Any, sinks: Any, *, transit_gpus: bool = True,
                   gain_limit: int = 32) -> GroupFlow:
    """Maximum flow from one group of nodes to another, its minimum cut and each cut link's
    sensitivity, certified (cut = flow).

    Parameters
    ----------
    fab : Fabric
    sources, sinks : selector
        The two groups: a name pattern (``"n0.gpu*"``), attribute conditions
        (``"su=0,role=gpu"``), a mapping of conditions or a list of nodes
        (:mod:`fabricopt.analysis.selection`). They must not share a node.
    transit_gpus : bool
        Whether flow may pass through GPUs outside the two groups (through a GPU's NVLink to
        its server's other NICs, as PXN routing does). Default True.
    gain_limit : int
        Cut bundles (largest first) whose gain from doubling is computed, one maximum flow
        each; 0 for none.

    Returns
    -------
    GroupFlow
        ``value_gbps``, ``cut`` (each bundle with its sensitivity), ``check(fab)``.

    Examples
    --------
    Two leaves of two 400 Gb/s GPUs each under two spines: leaf 0's GPUs send at most
    800 Gb/s to leaf 1's, bound by their own links (and equally by leaf 0's two uplinks).

    >>> import fabricopt as fo
    >>> fab = fo.leaf_spine(leaves=2, spines=2, endpoints_per_leaf=2, link_gbps=400)
    >>> r = group_max_flow(fab, "name=g0|g1", "name=g2|g3")
    >>> r.value_gbps, r.exact, r.check(fab)
    (800.0, True, [])
    >>> [c.loss_one_link_gbps for c in r.cut]
    [400.0, 400.0]
    """
    func = "group_max_flow"
    check_fabric(func, fab)
    transit_gpus = check_bool(func, "transit_gpus", transit_gpus)
    gain_limit = check_int(func, "gain_limit", gain_limit, minimum=0)
    src = select_nodes(fab, sources, _func=func, _name="sources")
    snk = select_nodes(fab, sinks, _func=func, _name="sinks")
    both = set(src) & set(snk)
    if both:
        raise fail(func, "sinks", "a group sharing no node with the sources (both hold "
                   + ", ".join(str(v) for v in list(both)[:3]) + ")", describe(sinks))
    start = time.perf_counter()
    net = _network(fab, src, snk, transit_gpus)
    value, flows = nx.maximum_flow(net, _SOURCE, _SINK,
                                   flow_func=nx.algorithms.flow.preflow_push)
    # The source side: what the residual network still reaches from the super source.
    side = {_SOURCE}
    queue = deque([_SOURCE])
    while queue:
        u = queue.popleft()
        for v, d in net[u].items():
            if v not in side and ("capacity" not in d
                                  or flows[u][v] < d["capacity"] - TOLERANCE * max(1, value)):
                side.add(v)
                queue.append(v)
        for v in net.predecessors(u):
            if v not in side and flows[v][u] > TOLERANCE * max(1, value):
                side.add(v)
                queue.append(v)
    g = fab.graph
    arcs = sorted(((u, v) for u in side if u != _SOURCE for v in net[u]
                   if v not in side and v != _SINK),
                  key=lambda a: (-net[a[0]][a[1]]["capacity"], str(a[0]), str(a[1])))
    gains = _gains(net, flows, arcs[:gain_limit])
    cut = []
    for i, (u, v) in enumerate(arcs):
        d = g[u][v]
        cap = float(d.get("capacity", 0.0))
        links = int(d.get("links", 1))
        cut.append(CutLink(u, v, str(d.get("tier", "link")), cap, links, cap / links, cap,
                           gains[i] if i < gain_limit else None))
    carried = {(u, v): f for u, nbrs in flows.items() if u != _SOURCE
               for v, f in nbrs.items() if v != _SINK and f > 0}
    return GroupFlow(fab.name, tuple(src), tuple(snk), describe(sources), describe(sinks),
                     float(value), sum(c.capacity_gbps for c in cut), tuple(cut),
                     frozenset(side - {_SOURCE}), carried, transit_gpus,
                     max(0, len(arcs) - gain_limit), time.perf_counter() - start)
