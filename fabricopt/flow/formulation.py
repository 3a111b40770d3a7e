r"""The max-concurrent-flow LP, built whole with sparse matrices.

For a fabric with arcs :math:`a` of capacity :math:`c_a` and demands :math:`D(s, t)`, the
largest :math:`\theta` such that :math:`\theta D` can be routed at once is

.. math::

    \max \theta \quad\text{s.t.}\quad
    \sum_{a \in \delta^+(v)} f_{k,a} - \sum_{a \in \delta^-(v)} f_{k,a} = \theta\, b_k(v)
    \;\; \forall k, v, \qquad
    \sum_k f_{k,a} \le c_a \;\; \forall a, \qquad f \ge 0,

with one commodity :math:`k` per *source node* (source aggregation, exact for fractional
flow) and :math:`b_k(v)` its supply: the total it sends at its source, minus what node
:math:`v` receives from it.

Two reductions make the LP small, and both are undone when reading the answer back
(:class:`CollapsedDemand` and :class:`FlowModel` keep the maps):

* **Endpoint collapse.** An endpoint joined to one switch by one link (a NIC under a leaf)
  forwards nothing; all its traffic crosses that link. It is removed from the graph, its
  demand moves to the switch, and its link stays as the row
  :math:`\theta \cdot \mathrm{out}(e) \le c_{e \to w}` (and the same for what it receives).
  Pairs under the same switch then only load their endpoint links.
* **Source aggregation** over the collapsed sources: one commodity per switch with endpoints.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np
import scipy.sparse as sp

from .._checks import check_bool, fail
from ..errors import TrafficError
from ..fabric import check_fabric
from ..graph_arrays import GraphArrays
from ..traffic import Traffic
from .certificate import distance_bound
from .lp import LinearProgram
from .memory import LPSize, check_fits
from .model import DistanceBound, LiftedFlow, max_theta_lp


def _positions(ga: GraphArrays, nodes: tuple[Hashable, ...]) -> np.ndarray:
    """Node indices of ``nodes`` in ``ga`` (C-level lookups: a list comprehension over the
    endpoints was a tenth of a second per pass on a 524,288-GPU fat tree)."""
    return np.fromiter(map(ga.index.__getitem__, nodes), dtype=np.int64, count=len(nodes))


@dataclass(frozen=True)
class Collapse:
    """Which endpoints hang off one switch by one link, and where their traffic enters.

    ``attach[i]`` is the node index where endpoint ``i`` (position in the traffic's endpoint
    list) enters the core graph: its switch if collapsed, else itself. ``out_arc[i]`` and
    ``in_arc[i]`` are its link's arc indices (-1 when not collapsed). ``core_arc`` masks
    the arcs left in the core graph.
    """

    endpoints: tuple[Hashable, ...]
    attach: np.ndarray
    out_arc: np.ndarray
    in_arc: np.ndarray
    core_arc: np.ndarray

    @classmethod
    def of(cls, ga: GraphArrays, fab: Any, endpoints: tuple[Hashable, ...]) -> Collapse:
        n = ga.n_nodes
        out_deg = np.bincount(ga.tail, minlength=n)
        in_deg = np.bincount(ga.head, minlength=n)
        is_endpoint = np.zeros(n, dtype=bool)
        is_endpoint[_positions(ga, fab.endpoints)] = True
        # The single out-arc of each node with out-degree 1 (and in-arc likewise).
        first_out = np.full(n, -1)
        first_out[ga.tail[::-1]] = np.arange(ga.n_arcs)[::-1]
        first_in = np.full(n, -1)
        first_in[ga.head[::-1]] = np.arange(ga.n_arcs)[::-1]
        idx = _positions(ga, endpoints)
        if not ga.n_arcs:  # nothing to collapse, and the arc lookups below need an arc
            none = np.full(len(idx), -1)
            return cls(endpoints, idx, none, none.copy(), np.ones(0, dtype=bool))
        oa, ia = first_out[idx], first_in[idx]
        ok = (out_deg[idx] == 1) & (in_deg[idx] == 1) & (oa >= 0) & (ia >= 0)
        w = np.where(ok, ga.head[np.maximum(oa, 0)], -1)
        ok &= (w >= 0) & (ga.tail[np.maximum(ia, 0)] == w)
        ok &= ~is_endpoint[np.maximum(w, 0)]  # never collapse onto another endpoint
        attach = np.where(ok, w, idx)
        out_arc = np.where(ok, oa, -1)
        in_arc = np.where(ok, ia, -1)
        core = np.ones(ga.n_arcs, dtype=bool)
        core[out_arc[ok]] = False
        core[in_arc[ok]] = False
        return cls(endpoints, attach, out_arc, in_arc, core)

    def endpoint_pair(self, ga: GraphArrays, pair: Any) -> Any:
        """A pair of core nodes named by endpoints that enter there (inverse map)."""
        if pair is None:
            return None
        s, t = ga.index[pair[0]], ga.index[pair[1]]
        src = next((self.endpoints[i] for i in np.flatnonzero(self.attach == s)), pair[0])
        dst = next((self.endpoints[i] for i in np.flatnonzero(self.attach == t)), pair[1])
        return (src, dst)

    def endpoint_cut(self, ga: GraphArrays, cut: Any) -> Any:
        """A set of core nodes with the collapsed endpoints of its switches added back."""
        if cut is None:
            return None
        inside = np.zeros(ga.n_nodes, dtype=bool)
        inside[[ga.index[v] for v in cut]] = True
        extra = [self.endpoints[i] for i in np.flatnonzero(inside[self.attach])]
        return frozenset(cut) | frozenset(extra)


def aggregate_demand(traffic: Traffic, position: dict[Hashable, int], attach: np.ndarray,
                     ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Demand between attachment nodes, and what each endpoint sends and receives.

    Returns ``(src, dst, gbps, out_gbps, in_gbps)``: aggregated pairs of distinct attachment
    nodes with their summed demand, and per endpoint (by ``position``) its total out and in.
    """
    n_ep = len(position)
    if traffic.is_uniform:
        g = float(traffic.uniform_gbps)  # type: ignore[arg-type]
        nodes, counts = np.unique(attach, return_counts=True)
        src, dst = np.meshgrid(nodes, nodes, indexing="ij")
        mult = np.outer(counts, counts).astype(float)
        keep = src != dst
        out = np.full(n_ep, g * (n_ep - 1))
        return src[keep], dst[keep], g * mult[keep], out, out.copy()
    pairs = traffic.pairs
    s_pos = np.fromiter((position[s] for s, _ in pairs), dtype=np.int64, count=len(pairs))
    t_pos = np.fromiter((position[t] for _, t in pairs), dtype=np.int64, count=len(pairs))
    d = np.fromiter(pairs.values(), dtype=float, count=len(pairs))
    out = np.bincount(s_pos, weights=d, minlength=n_ep)
    inc = np.bincount(t_pos, weights=d, minlength=n_ep)
    a_s, a_t = attach[s_pos], attach[t_pos]
    keep = a_s != a_t
    base = int(attach.max()) + 1
    key = a_s[keep] * base + a_t[keep]
    uniq, inv = np.unique(key, return_inverse=True)
    summed = np.bincount(inv, weights=d[keep])
    return uniq // base, uniq % base, summed, out, inc


@dataclass(frozen=True)
class CollapsedDemand:
    """The endpoint-collapse and source-aggregation reduction of a traffic on a fabric.

    Demand moves from collapsed endpoints to their switches (``src``, ``dst``, ``gbps``:
    aggregated pairs of distinct core nodes); each collapsed endpoint link becomes a row
    ``theta * ep_rows_gbps <= capacity[ep_rows_arc]``. It is cheap to build (no LP), proves
    the distance bound of any lengths on its own (:meth:`length_bound`) and names what it
    finds by endpoints again (its inverse map).
    """

    ga: GraphArrays
    traffic: Traffic
    collapse: Collapse
    src: np.ndarray
    dst: np.ndarray
    gbps: np.ndarray
    out_gbps: np.ndarray
    in_gbps: np.ndarray
    ep_rows_arc: np.ndarray
    ep_rows_gbps: np.ndarray
    include_endpoint_links: bool

    @classmethod
    def of(cls, fab: Any, traffic: Traffic, include_endpoint_links: bool = True,
           ga: GraphArrays | None = None) -> CollapsedDemand:
        ga = ga or GraphArrays.from_fabric(fab)
        eps = traffic.endpoints
        collapse = Collapse.of(ga, fab, eps)
        src, dst, gbps, out, inc = aggregate_demand(
            traffic, {e: i for i, e in enumerate(eps)}, collapse.attach)
        collapsed = collapse.out_arc >= 0
        ep_arc = np.concatenate([collapse.out_arc[collapsed], collapse.in_arc[collapsed]])
        ep_gbps = np.concatenate([out[collapsed], inc[collapsed]])
        # An endpoint that only sends (or only receives) bounds nothing on its other arc.
        keep = (ep_gbps > 0) & include_endpoint_links
        return cls(ga, traffic, collapse, src, dst, gbps, out, inc, ep_arc[keep],
                   ep_gbps[keep], include_endpoint_links)

    @property
    def sources(self) -> np.ndarray:
        """Core nodes that send (one commodity each)."""
        return np.unique(self.src)

    @property
    def min_demand(self) -> float:
        """Smallest aggregated demand of a commodity to a target (Gb/s per unit theta)."""
        return float(self.gbps.min()) if len(self.gbps) else np.inf

    @property
    def counted_gbps(self) -> float:
        """Total demand the reduced problem routes per unit theta (same-switch pairs count
        only with their endpoint links)."""
        return self.traffic.total_gbps if self.include_endpoint_links else float(self.gbps.sum())

    @property
    def mean_out_gbps(self) -> float:
        """Routed demand per sending endpoint (Gb/s per unit theta)."""
        return self.counted_gbps / max(int(np.count_nonzero(self.out_gbps)), 1)

    def length_bound(self, lengths: np.ndarray) -> DistanceBound:
        """The distance bound of ``lengths`` (one per fabric arc), with a disconnected pair
        and its cut named by endpoints."""
        bound = distance_bound(self.ga, lengths, self.collapse.core_arc, self.src, self.dst,
                               self.gbps, self.ep_rows_arc, self.ep_rows_gbps)
        if bound.unreachable is None:
            return bound
        return DistanceBound(bound.upper, bound.numerator, bound.denominator,
                             self.collapse.endpoint_pair(self.ga, bound.unreachable),
                             self.collapse.endpoint_cut(self.ga, bound.cut))

    def endpoint_limit(self) -> float:
        """theta <= capacity / demand of every collapsed endpoint link."""
        if not len(self.ep_rows_arc):
            return np.inf
        return float(np.min(self.ga.capacity[self.ep_rows_arc] / self.ep_rows_gbps))


def flow_lp_size(fab: Any, traffic: Traffic, include_endpoint_links: bool = True,
                 ga: GraphArrays | None = None) -> LPSize:
    """The size of :func:`~fabricopt.flow.build_flow_lp`'s LP, counted without building it.

    With ``K`` commodities (switches or endpoints that send across the core), ``m`` core
    arcs, ``n`` nodes, ``E`` endpoint rows and ``P`` aggregated pairs of distinct core
    nodes: ``K m + 1`` columns (flows, then theta); ``m + E + K n`` rows (capacities,
    endpoint links, conservation); ``K m`` nonzeros in the capacity rows, ``2 K m`` in the
    conservation rows, ``E + P + K`` in the theta column.

    >>> import fabricopt as fo
    >>> fab = fo.ring(4)
    >>> size = flow_lp_size(fab, fo.all_to_all(fab))
    >>> lp = fo.build_flow_lp(fab, fo.all_to_all(fab)).lp
    >>> (size.rows, size.columns, size.nonzeros) == (lp.n_rows, lp.n_cols, lp.nnz)
    True
    """
    ga = ga or GraphArrays.from_fabric(fab)
    eps = traffic.endpoints
    collapse = Collapse.of(ga, fab, eps)
    collapsed = collapse.out_arc >= 0
    if traffic.is_uniform:
        K = len(np.unique(collapse.attach))
        K = K if len(eps) > 1 and K > 1 else 0
        pairs = K * (K - 1)
        sends = receives = collapsed if len(eps) > 1 else np.zeros_like(collapsed)
    else:
        position = {e: i for i, e in enumerate(eps)}
        src = np.fromiter((position[s] for s, _ in traffic.pairs), dtype=np.int64,
                          count=len(traffic.pairs))
        dst = np.fromiter((position[t] for _, t in traffic.pairs), dtype=np.int64,
                          count=len(traffic.pairs))
        gbps = np.fromiter(traffic.pairs.values(), dtype=float, count=len(traffic.pairs))
        a_s, a_t = collapse.attach[src], collapse.attach[dst]
        cross = a_s != a_t
        K = len(np.unique(a_s[cross]))
        pairs = len(np.unique(a_s[cross] * (int(collapse.attach.max()) + 1) + a_t[cross]))
        out = np.bincount(src, weights=gbps, minlength=len(eps)) > 0
        into = np.bincount(dst, weights=gbps, minlength=len(eps)) > 0
        sends, receives = collapsed & out, collapsed & into
    E = int(sends.sum() + receives.sum()) if include_endpoint_links else 0
    m, n = int(collapse.core_arc.sum()), ga.n_nodes
    return LPSize(rows=m + E + K * n, columns=K * m + 1,
                  nonzeros=3 * K * m + E + pairs + K)


#: Commodities per block when checking conservation (bounds the temporary memory).
RESIDUAL_BLOCK = 256


@dataclass(frozen=True)
class FlowModel:
    """A built max-concurrent-flow LP with everything needed to read its answer back.

    Column layout of ``lp``: ``K`` blocks of ``len(core_arcs)`` flow variables (commodity
    ``k`` rooted at node ``sources[k]``), then theta. Rows: one capacity row per core arc,
    then the endpoint-link rows; one conservation row per (commodity, node). Follows
    :class:`~fabricopt.flow.model.ThroughputModel`; the lifted flow is the point itself. The
    sparse matrices are assembled on first use of ``lp``, so a solver that never needs them
    (:mod:`fabricopt.flow.approx`) never pays their memory.
    """

    demand: CollapsedDemand
    core_arcs: np.ndarray
    sources: np.ndarray
    supply: sp.csr_matrix          # K x n_nodes, in Gb/s per unit theta
    constrained: np.ndarray        # arcs with a capacity row

    @property
    def ga(self) -> GraphArrays:
        return self.demand.ga

    @property
    def agg(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Aggregated demand ``(src, dst, gbps)`` between core nodes."""
        return self.demand.src, self.demand.dst, self.demand.gbps

    @property
    def ep_rows_arc(self) -> np.ndarray:
        return self.demand.ep_rows_arc

    @property
    def ep_rows_gbps(self) -> np.ndarray:
        return self.demand.ep_rows_gbps

    @cached_property
    def inc_core(self) -> sp.csr_matrix:
        """Node-arc incidence of the core arcs (+1 at the tail, -1 at the head)."""
        ga, core = self.ga, self.core_arcs
        m = len(core)
        return sp.csr_matrix(
            (np.concatenate([np.ones(m), -np.ones(m)]),
             (np.concatenate([ga.tail[core], ga.head[core]]),
              np.concatenate([np.arange(m), np.arange(m)]))), shape=(ga.n_nodes, m))

    @cached_property
    def lp(self) -> LinearProgram:
        """The LP itself (see the class docstring for its layout); refused before it is
        assembled when it would not fit in memory (:mod:`fabricopt.flow.memory`)."""
        size = self.lp_size
        need = LPSize(size["rows"], size["columns"], size["nonzeros"])
        check_fits("FlowModel.lp", "the LP", need.bytes, f"an LP of {need}",
                   "Solve it with max_concurrent_flow(method='auto') or method='approx', "
                   "which never assemble it.")
        K, m, n = self.n_commodities, len(self.core_arcs), self.ga.n_nodes
        # Conservation: kron(I_K, incidence of core arcs); capacity: the flows add up.
        return max_theta_lp(sp.kron(sp.identity(K, format="csr"), self.inc_core, format="csr"),
                            self.supply.reshape((K * n, 1)),
                            sp.kron(np.ones((1, K)), sp.identity(m, format="csr"),
                                    format="csr"),
                            self.ga.capacity[self.core_arcs],
                            # Endpoint links carry exactly theta times what the endpoint sends.
                            theta_rows=self.ep_rows_gbps,
                            theta_capacity=self.ga.capacity[self.ep_rows_arc])

    @property
    def lp_size(self) -> dict[str, int]:
        """Columns, rows and nonzeros of ``lp``, counted without assembling it."""
        K, m, E = self.n_commodities, len(self.core_arcs), len(self.ep_rows_arc)
        return {"columns": K * m + 1, "rows": m + E + K * self.ga.n_nodes,
                "nonzeros": K * m + E + K * self.inc_core.nnz + int(self.supply.nnz),
                "commodities": K}

    @property
    def traffic(self) -> Traffic:
        return self.demand.traffic

    @property
    def collapse(self) -> Collapse:
        return self.demand.collapse

    @property
    def include_endpoint_links(self) -> bool:
        return self.demand.include_endpoint_links

    @property
    def n_commodities(self) -> int:
        return len(self.sources)

    @property
    def mean_out_gbps(self) -> float:
        return self.demand.mean_out_gbps

    @property
    def min_demand(self) -> float:
        return self.demand.min_demand

    def full_load(self, x: np.ndarray) -> np.ndarray:
        """Gb/s on every arc of the fabric for the LP point ``x``."""
        m_core = len(self.core_arcs)
        theta = x[-1]
        flows = np.clip(x[:-1], 0.0, None).reshape(self.n_commodities, m_core)
        load = np.zeros(self.ga.n_arcs)
        load[self.core_arcs] = flows.sum(axis=0)
        np.add.at(load, self.demand.ep_rows_arc, theta * self.demand.ep_rows_gbps)
        return load

    def conservation_residual(self, x: np.ndarray) -> float:
        """Largest per-commodity L1 norm of the conservation violation at ``x`` (Gb/s),
        negative flows clipped to zero first."""
        K, m = self.n_commodities, len(self.core_arcs)
        if K == 0:
            return 0.0
        flows = x[:-1].reshape(K, m)
        worst = 0.0
        for lo in range(0, K, RESIDUAL_BLOCK):  # a block of commodities at a time
            f = np.clip(flows[lo:lo + RESIDUAL_BLOCK], 0.0, None)
            r = (self.inc_core @ f.T).T - x[-1] * self.supply[lo:lo + RESIDUAL_BLOCK].toarray()
            worst = max(worst, float(np.abs(r).sum(axis=1).max()))
        return worst

    def lift(self, x: np.ndarray) -> LiftedFlow:
        return LiftedFlow(float(x[-1]), self.full_load(x), self.conservation_residual(x),
                          np.asarray(x))

    def arc_lengths(self, dual_ub: np.ndarray) -> np.ndarray:
        """Lengths from the capacity-row duals (clipped to their sign); an endpoint link's
        row gives its arc's length."""
        m = len(self.core_arcs)
        lengths = np.zeros(self.ga.n_arcs)
        lengths[self.core_arcs] = np.clip(-dual_ub[:m], 0.0, None)
        np.add.at(lengths, self.demand.ep_rows_arc, np.clip(-dual_ub[m:], 0.0, None))
        return lengths

    def length_bound(self, lengths: np.ndarray) -> DistanceBound:
        return self.demand.length_bound(lengths)


def build_flow_lp(fab: Any, traffic: Traffic, include_endpoint_links: bool = True,
                  ga: GraphArrays | None = None) -> FlowModel:
    """Build the exact max-concurrent-flow LP of ``traffic`` on ``fab``.

    With ``include_endpoint_links=False`` the links of endpoints that hang off one switch are
    not constraints and pairs under the same switch are dropped: the fabric-only view (what
    the switches can carry, NICs aside; see ``docs/throughput.md``).

    Returns a :class:`FlowModel`; its ``lp`` attribute is the :class:`LinearProgram` (inspect
    it, export it with :func:`fabricopt.flow.export_mps`, or solve it with any backend).

    Examples
    --------
    >>> import fabricopt as fo
    >>> model = fo.build_flow_lp(fo.ring(4), fo.all_to_all(fo.ring(4)))
    >>> model.n_commodities, model.lp.n_cols   # 4 sources x 8 arcs + theta
    (4, 33)
    """
    check_fabric("build_flow_lp", fab)
    if not isinstance(traffic, Traffic):
        raise fail("build_flow_lp", "traffic", "a Traffic", traffic)
    include_endpoint_links = check_bool("build_flow_lp", "include_endpoint_links",
                                        include_endpoint_links)
    if ga is not None and not isinstance(ga, GraphArrays):
        raise fail("build_flow_lp", "ga", "None or the GraphArrays of fab", ga)
    traffic.check_endpoints(fab, "build_flow_lp")
    demand = CollapsedDemand.of(fab, traffic, include_endpoint_links, ga)
    if not np.any(demand.out_gbps > 0):
        raise TrafficError(f"{traffic.name}: no positive demand")
    if not include_endpoint_links and not len(demand.src):
        raise TrafficError(f"{traffic.name}: every pair is under one switch, so without "
                           "endpoint links nothing crosses the fabric")
    ga = demand.ga
    core_arcs = np.flatnonzero(demand.collapse.core_arc)
    n = ga.n_nodes
    sources = demand.sources
    K = len(sources)
    k_of = np.searchsorted(sources, demand.src)
    # supply[k, v]: + total sent at the source, - demand received at v.
    sent = np.bincount(k_of, weights=demand.gbps, minlength=K)
    supply = sp.csr_matrix((np.concatenate([-demand.gbps, sent]),
                            (np.concatenate([k_of, np.arange(K)]),
                             np.concatenate([demand.dst, sources]))), shape=(K, n))
    constrained = np.zeros(ga.n_arcs, dtype=bool)
    constrained[core_arcs] = True
    constrained[demand.ep_rows_arc] = True
    return FlowModel(demand, core_arcs, sources, supply, constrained)
