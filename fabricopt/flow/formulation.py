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
(:class:`FlowModel` keeps the maps):

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

from ..errors import TrafficError
from ..traffic import Traffic
from .graph_arrays import GraphArrays
from .lp import LinearProgram


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
        is_endpoint[[ga.index[e] for e in fab.endpoints]] = True
        # The single out-arc of each node with out-degree 1 (and in-arc likewise).
        first_out = np.full(n, -1)
        first_out[ga.tail[::-1]] = np.arange(ga.n_arcs)[::-1]
        first_in = np.full(n, -1)
        first_in[ga.head[::-1]] = np.arange(ga.n_arcs)[::-1]
        idx = np.array([ga.index[e] for e in endpoints], dtype=np.int64)
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
    key = a_s[keep] * (int(attach.max()) + 1) + a_t[keep]
    uniq, inv = np.unique(key, return_inverse=True)
    summed = np.bincount(inv, weights=d[keep])
    base = int(attach.max()) + 1
    return uniq // base, uniq % base, summed, out, inc


#: Commodities per block when checking conservation (bounds the temporary memory).
RESIDUAL_BLOCK = 256


@dataclass(frozen=True)
class FlowModel:
    """A built max-concurrent-flow LP with everything needed to read its answer back.

    Column layout of ``lp``: ``K`` blocks of ``len(core_arcs)`` flow variables (commodity
    ``k`` rooted at node ``sources[k]``), then theta. Rows: one capacity row per core arc,
    then the endpoint-link rows; one conservation row per (commodity, node). The sparse
    matrices are assembled on first use of ``lp``, so solvers that never need them (such as
    :mod:`fabricopt.flow.approx`) skip their memory.
    """

    ga: GraphArrays
    traffic: Traffic
    collapse: Collapse
    core_arcs: np.ndarray
    sources: np.ndarray
    supply: sp.csr_matrix          # K x n_nodes, in Gb/s per unit theta
    ep_rows_arc: np.ndarray        # arc of each endpoint-link row
    ep_rows_gbps: np.ndarray       # demand crossing that arc per unit theta
    agg: tuple[np.ndarray, np.ndarray, np.ndarray]  # aggregated (src, dst, gbps)
    out_gbps: np.ndarray
    in_gbps: np.ndarray
    constrained: np.ndarray        # arcs with a capacity row
    counted_gbps: float            # total demand the LP routes (per unit theta)
    include_endpoint_links: bool

    @property
    def n_commodities(self) -> int:
        return len(self.sources)

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
        """The LP itself (see the class docstring for its layout)."""
        K, m = self.n_commodities, len(self.core_arcs)
        # Conservation: kron(I_K, incidence of core arcs), with -supply in the theta column.
        A_eq = sp.hstack([sp.kron(sp.identity(K, format="csr"), self.inc_core, format="csr"),
                          -self.supply.reshape((K * self.ga.n_nodes, 1))], format="csr")
        b_eq = np.zeros(K * self.ga.n_nodes)
        # Capacity of core arcs: the commodities' flows add up.
        cap_rows = sp.hstack([sp.kron(np.ones((1, K)), sp.identity(m, format="csr"),
                                      format="csr"), sp.csr_matrix((m, 1))], format="csr")
        # Endpoint links carry exactly theta times what the endpoint sends (receives).
        E = len(self.ep_rows_arc)
        ep_rows = sp.csr_matrix((self.ep_rows_gbps, (np.arange(E), np.full(E, K * m))),
                                shape=(E, K * m + 1))
        A_ub = sp.vstack([cap_rows, ep_rows], format="csr")
        b_ub = np.concatenate([self.ga.capacity[self.core_arcs],
                               self.ga.capacity[self.ep_rows_arc]])
        c = np.zeros(K * m + 1)
        c[-1] = -1.0
        return LinearProgram(c, A_ub, b_ub, A_eq, b_eq, np.zeros(K * m + 1),
                             np.full(K * m + 1, np.inf))

    @property
    def lp_size(self) -> dict[str, int]:
        """Columns, rows and nonzeros of ``lp``, counted without assembling it."""
        K, m, E = self.n_commodities, len(self.core_arcs), len(self.ep_rows_arc)
        return {"columns": K * m + 1, "rows": m + E + K * self.ga.n_nodes,
                "nonzeros": K * m + E + K * self.inc_core.nnz + int(self.supply.nnz),
                "commodities": K}

    def full_load(self, x: np.ndarray) -> np.ndarray:
        """Gb/s on every arc of the fabric for the LP point ``x``."""
        m_core = len(self.core_arcs)
        theta = x[-1]
        flows = np.clip(x[:-1], 0.0, None).reshape(self.n_commodities, m_core)
        load = np.zeros(self.ga.n_arcs)
        load[self.core_arcs] = flows.sum(axis=0)
        np.add.at(load, self.ep_rows_arc, theta * self.ep_rows_gbps)
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

    @property
    def min_demand(self) -> float:
        """Smallest aggregated demand of a commodity to a target (Gb/s per unit theta)."""
        return float(self.agg[2].min()) if len(self.agg[2]) else np.inf


def build_flow_lp(fab: Any, traffic: Traffic, include_endpoint_links: bool = True,
                  ) -> FlowModel:
    """Build the exact max-concurrent-flow LP of ``traffic`` on ``fab``.

    With ``include_endpoint_links=False`` the links of endpoints that hang off one switch are
    not constraints and pairs under the same switch are dropped: the fabric-only view of
    ``reference/bounds.md`` (what the switches can carry, NICs aside).

    Returns a :class:`FlowModel`; its ``lp`` attribute is the :class:`LinearProgram` (inspect
    it, export it with :func:`fabricopt.flow.export_mps`, or solve it with any backend).

    Examples
    --------
    >>> import fabricopt as fo
    >>> model = fo.build_flow_lp(fo.ring(4), fo.all_to_all(fo.ring(4)))
    >>> model.n_commodities, model.lp.n_cols   # 4 sources x 8 arcs + theta
    (4, 33)
    """
    traffic.check_endpoints(fab)
    ga = GraphArrays.from_fabric(fab)
    eps = traffic.endpoints
    position = {e: i for i, e in enumerate(eps)}
    col = Collapse.of(ga, fab, eps)
    src, dst, gbps, out, inc = aggregate_demand(traffic, position, col.attach)
    if not np.any(out > 0):
        raise TrafficError(f"{traffic.name}: no positive demand")
    if not include_endpoint_links and not len(src):
        raise TrafficError(f"{traffic.name}: every pair is under one switch, so without "
                           "endpoint links nothing crosses the fabric")

    core_arcs = np.flatnonzero(col.core_arc)
    n = ga.n_nodes
    sources = np.unique(src)
    K = len(sources)
    k_of = np.searchsorted(sources, src)
    # supply[k, v]: + total sent at the source, - demand received at v.
    sent = np.bincount(k_of, weights=gbps, minlength=K)
    rows = np.concatenate([k_of, np.arange(K)])
    cols = np.concatenate([dst, sources])
    vals = np.concatenate([-gbps, sent])
    supply = sp.csr_matrix((vals, (rows, cols)), shape=(K, n))

    collapsed = col.out_arc >= 0
    ep_arc = np.concatenate([col.out_arc[collapsed], col.in_arc[collapsed]])
    ep_gbps = np.concatenate([out[collapsed], inc[collapsed]])
    keep = (ep_gbps > 0) & include_endpoint_links
    ep_arc, ep_gbps = ep_arc[keep], ep_gbps[keep]
    constrained = np.zeros(ga.n_arcs, dtype=bool)
    constrained[core_arcs] = True
    constrained[ep_arc] = True
    counted = float(gbps.sum()) if not include_endpoint_links else traffic.total_gbps
    return FlowModel(ga, traffic, col, core_arcs, sources, supply, ep_arc, ep_gbps,
                     (src, dst, gbps), out, inc, constrained, counted, include_endpoint_links)
