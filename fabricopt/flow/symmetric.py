r"""Exact all-to-all throughput from one root's flow, for fabrics with a symmetry claim.

If a group of automorphisms acts transitively on the :math:`T` endpoints and the demand is
invariant (uniform all-to-all), an optimal flow can be taken invariant. One root's flow
:math:`f_0` then determines all others, and each arc orbit :math:`O` carries
:math:`(T/|O|) \sum_{a \in O} f_0(a)` on each of its arcs (``docs/throughput.md``):

.. math::

    \max \theta \;\text{s.t.}\; \text{conservation of } f_0 \text{ with supply }
    \theta\, b,\quad \tfrac{T}{|O|} \textstyle\sum_{a \in O} f_0(a) \le c_O \;\forall O.

That LP has one column per arc. It is reduced further by **colour refinement** of the root
LP (Grohe, Kersting, Mladenov, Selman, "Dimension reduction via colour refinement", ESA
2014): starting from the root, the other endpoints, the switches and the arc orbits, nodes
and arcs are split until every node of a class has the same number of arcs of each class in
and out. Such an *equitable* partition reduces an LP exactly: a solution that is constant on
arc classes exists among the optimal ones, and any reduced solution lifts to a feasible one.
The partition is checked to be equitable before use (hashes could collide), the lifted flow
is checked for conservation on the whole graph, and the upper bound comes from the dual
lengths through the distance bound, so the answer carries the same certificate as the full LP.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import dijkstra

from ..graph_arrays import GraphArrays
from .certificate import DistanceBound
from .formulation import Collapse
from .lp import LinearProgram
from .model import LiftedFlow, max_theta_lp

_RNG_SEED = 20_14  # fixed: refinement must be reproducible


def _dense(values: np.ndarray) -> np.ndarray:
    """Class ids 0..k-1 of a 1-D array, in sorted order of the values."""
    return np.unique(values, return_inverse=True)[1].ravel().astype(np.int64)


def _relabel(*columns: np.ndarray) -> np.ndarray:
    """Dense class ids 0..k-1 for rows of the given integer columns.

    Columns are combined pairwise as ``a * (max(b) + 1) + b`` on dense ids, which stays far
    below 2^63 for any graph that fits in memory, so only 1-D sorts are needed.
    """
    out = _dense(columns[0])
    for col in columns[1:]:
        b = _dense(col)
        out = _dense(out * (int(b.max()) + 1) + b)
    return out


def color_refinement(ga: GraphArrays, node_color: np.ndarray, arc_color: np.ndarray,
                     ) -> tuple[np.ndarray, np.ndarray]:
    """Coarsest equitable refinement of the given node and arc colourings.

    Each round splits nodes by the multiset of (arc colour, neighbour class) over their
    out-arcs and over their in-arcs. Multisets are compared by sums of random 64-bit keys,
    so a round costs two scatter-adds over the arcs and sorts over the nodes only; the
    result is verified by :func:`is_equitable`. Arcs end up classed by (colour, tail class,
    head class).
    """
    rng = np.random.default_rng(_RNG_SEED)
    nc = _relabel(node_color)
    ac = _relabel(arc_color)
    n = ga.n_nodes
    key_arc = rng.integers(1, 2**63, size=int(ac.max()) + 1 if len(ac) else 1, dtype=np.uint64)
    while True:
        key_node = rng.integers(1, 2**63, size=int(nc.max()) + 1, dtype=np.uint64)
        # A node-class key times an odd arc key spreads each (arc colour, class) pair.
        w_out = key_arc[ac] * (key_node[nc[ga.head]] | np.uint64(1))
        w_in = (key_arc[ac] ^ np.uint64(0x9E3779B97F4A7C15)) * (key_node[nc[ga.tail]]
                                                               | np.uint64(1))
        h_out = np.zeros(n, dtype=np.uint64)
        h_in = np.zeros(n, dtype=np.uint64)
        np.add.at(h_out, ga.tail, w_out)
        np.add.at(h_in, ga.head, w_in)
        nc_new = _relabel(nc, h_out.view(np.int64), h_in.view(np.int64))
        if nc_new.max() == nc.max():
            return nc_new, _relabel(ac, nc_new[ga.tail], nc_new[ga.head])
        nc = nc_new


def class_counts(ga: GraphArrays, nc: np.ndarray, ac: np.ndarray, out: bool,
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(node, arc class, count) triples of arcs leaving (``out``) or entering each node."""
    ends = ga.tail if out else ga.head
    k = int(ac.max()) + 1
    key, counts = np.unique(ends * k + ac, return_counts=True)
    return key // k, key % k, counts


def is_equitable(ga: GraphArrays, nc: np.ndarray, ac: np.ndarray) -> bool:
    """True when every node of a class has the same count of each arc class out and in,
    and every arc of a class joins the same tail class to the same head class."""
    if len(ac) == 0:
        return True
    for col in (nc[ga.tail], nc[ga.head]):
        k = int(col.max()) + 1
        pairs = np.unique(ac * k + col)
        if len(np.unique(pairs // k)) != len(pairs):
            return False
    class_size = np.bincount(nc)
    for out in (True, False):
        node, arc_cls, cnt = class_counts(ga, nc, ac, out)
        key = nc[node] * (int(ac.max()) + 1) + arc_cls
        order = np.argsort(key, kind="stable")
        key, cnt = key[order], cnt[order]
        starts = np.flatnonzero(np.r_[True, key[1:] != key[:-1]])
        sizes = np.diff(np.r_[starts, len(key)])
        lo = np.minimum.reduceat(cnt, starts)
        hi = np.maximum.reduceat(cnt, starts)
        groups = key[starts] // (int(ac.max()) + 1)
        if np.any(lo != hi) or np.any(sizes != class_size[groups]):
            return False
    return True


def class_conservation_rows(ga: GraphArrays, nc: np.ndarray, ac: np.ndarray,
                            ) -> tuple[sp.csr_matrix, np.ndarray]:
    """Flow conservation of a class-constant flow: one row per node class, read off a
    representative node (the first of its class), one column per arc class.

    Returns the matrix (out minus in) and the representative of each node class; on an
    equitable partition every node of a class gives the same row.
    """
    n_ncls = int(nc.max()) + 1
    rep = np.full(n_ncls, -1)
    rep[nc[::-1]] = np.arange(ga.n_nodes)[::-1]
    row_of = np.full(ga.n_nodes, -1)
    row_of[rep] = np.arange(n_ncls)
    rows, cols, vals = [], [], []
    for ends, sign in ((ga.tail, 1.0), (ga.head, -1.0)):
        sel = row_of[ends] >= 0
        rows.append(row_of[ends[sel]])
        cols.append(ac[sel])
        vals.append(np.full(int(sel.sum()), sign))
    A = sp.csr_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))),
                      shape=(n_ncls, int(ac.max()) + 1))
    return A, rep


@dataclass(frozen=True)
class OrbitClasses:
    """Arc orbits of a fabric's symmetry claim, refined into the equitable classes of one
    root LP: the columns (arc classes) and conservation rows (node classes) it keeps.

    ``class_orbit[C]`` is the orbit holding arc class ``C`` and ``class_size[C]`` its arcs;
    without reduction every arc is its own class.
    """

    orbit: np.ndarray
    orbit_size: np.ndarray
    orbit_cap: np.ndarray
    node_class: np.ndarray
    arc_class: np.ndarray
    reduced: bool
    class_orbit: np.ndarray
    class_size: np.ndarray

    @classmethod
    def of(cls, fab: Any, ga: GraphArrays, node_color: np.ndarray,
           reduce: bool = True, symmetry: Any = None) -> OrbitClasses:
        """Orbits from ``fab.symmetry``; classes by colour refinement from ``node_color``
        (the root's supply pattern) when ``reduce`` and the result is equitable."""
        # ``fab.symmetry`` re-checks the claim against the graph: a caller that just did so
        # passes the claim in.
        arc_orbit = (symmetry or fab.symmetry).arc_orbit
        orbit = _relabel(np.fromiter((arc_orbit[a] for a in ga.arcs), dtype=np.int64,
                                     count=ga.n_arcs))
        orbit_size = np.bincount(orbit).astype(float)
        orbit_cap = np.zeros(len(orbit_size))
        orbit_cap[orbit] = ga.capacity
        reduced = False
        if reduce:
            nc, ac = color_refinement(ga, _relabel(node_color), orbit)
            reduced = is_equitable(ga, nc, ac)
        if not reduced:
            nc, ac = np.arange(ga.n_nodes), np.arange(ga.n_arcs)
        n_cls = int(ac.max()) + 1
        class_orbit = np.zeros(n_cls, dtype=np.int64)
        class_orbit[ac] = orbit
        class_size = np.bincount(ac, minlength=n_cls).astype(float)
        return cls(orbit, orbit_size, orbit_cap, nc, ac, reduced, class_orbit, class_size)

    @property
    def n_classes(self) -> int:
        return len(self.class_size)

    def lift(self, x: np.ndarray) -> np.ndarray:
        """The root's flow on every arc from a point of a class-reduced LP (flow columns
        first, one per arc class)."""
        return np.clip(x[self.arc_class], 0.0, None)


def invariant_loads(orbit: np.ndarray, orbit_size: np.ndarray, n_sources: float,
                    f0: np.ndarray) -> np.ndarray:
    """Load on every arc when each of ``n_sources`` sources routes like the root's flow
    ``f0`` (one value per arc): ``(n/|O|) sum_O f0`` on each arc of orbit ``O``."""
    per_orbit = np.bincount(orbit, weights=f0) * n_sources / orbit_size
    return per_orbit[orbit]


def conservation_residual(ga: GraphArrays, flow: np.ndarray, net_supply: np.ndarray) -> float:
    """L1 norm of (out - in) - supply over the nodes, for one flow on the arcs."""
    n = ga.n_nodes
    net = (np.bincount(ga.tail, weights=flow, minlength=n)
           - np.bincount(ga.head, weights=flow, minlength=n))
    return float(np.abs(net - net_supply).sum())


@dataclass(frozen=True)
class SymmetricModel:
    """The reduced root LP and the maps to lift its answer to every arc of the fabric.

    Follows :class:`~fabricopt.flow.model.ThroughputModel`; the lifted flow is the root's
    flow ``f0`` on every arc.
    """

    lp: LinearProgram
    ga: GraphArrays
    root: int
    gbps: float                    # demand per ordered pair
    endpoint_idx: np.ndarray       # node index of each endpoint, the root first
    classes: OrbitClasses
    supply: np.ndarray             # b per node, per unit theta
    row_orbit: np.ndarray          # orbit of each capacity row
    constrained: np.ndarray        # arcs whose orbit has a capacity row
    attach: np.ndarray             # where each endpoint enters the core graph
    include_endpoint_links: bool
    spot_checks: int = 2

    @property
    def n_endpoints(self) -> int:
        return len(self.endpoint_idx)

    @property
    def reduced(self) -> bool:
        return self.classes.reduced

    @property
    def min_demand(self) -> float:
        return self.gbps

    @property
    def mean_out_gbps(self) -> float:
        """Demand each endpoint sends per unit theta (Gb/s)."""
        return self.gbps * float(self.destinations(0).sum())

    @property
    def n_orbit_rows(self) -> int:
        return len(self.row_orbit)

    def destinations(self, i: int) -> np.ndarray:
        """Mask over endpoints of the targets of endpoint ``i``."""
        if self.include_endpoint_links:
            dest = np.ones(self.n_endpoints, dtype=bool)
        else:
            dest = self.attach != self.attach[i]
        dest[i] = False
        return dest

    def loads(self, f0: np.ndarray) -> np.ndarray:
        """Gb/s on every arc when every endpoint routes like the root (invariant flow)."""
        return invariant_loads(self.classes.orbit, self.classes.orbit_size, self.n_endpoints,
                               f0)

    def residual(self, f0: np.ndarray, theta: float) -> float:
        """L1 norm of the conservation violation of the lifted root flow on the whole graph."""
        return conservation_residual(self.ga, f0, theta * self.supply)

    def lift(self, x: np.ndarray) -> LiftedFlow:
        f0 = self.classes.lift(x)
        theta = float(x[-1])
        return LiftedFlow(theta, self.loads(f0), self.residual(f0, theta), f0)

    def arc_lengths(self, dual_ub: np.ndarray) -> np.ndarray:
        """Arc lengths from the orbit-row duals: ``(T/|O|) max(-y_O, 0)`` on each arc of
        ``O`` (duals of a minimisation's ``<=`` rows are non-positive; noise of the wrong sign
        is dropped)."""
        orbit, orbit_size = self.classes.orbit, self.classes.orbit_size
        y = np.zeros(len(orbit_size))
        y[self.row_orbit] = np.clip(-dual_ub[: self.n_orbit_rows], 0.0, None)
        return (self.n_endpoints / orbit_size * y)[orbit]

    def length_bound(self, lengths: np.ndarray) -> DistanceBound:
        """Distance bound of invariant lengths: T x (the root's distance sum), with the sum
        spot-checked at other endpoints (a wrong claim shows up as different sums)."""
        ga, eps = self.ga, self.endpoint_idx
        T = len(eps)
        picks = [0] + sorted({int(i) for i in np.linspace(0, T - 1, self.spot_checks + 2)[1:-1]}
                             | {T - 1})[: self.spot_checks]
        dist = dijkstra(ga.matrix(lengths), directed=True, indices=eps[picks])
        sums = np.array([dist[j, eps[self.destinations(i)]].sum()
                         for j, i in enumerate(picks)])
        numerator = float(ga.capacity @ lengths)
        if np.isinf(sums[0]):
            t = int(np.flatnonzero(np.isinf(dist[0, eps]))[0])
            reach = frozenset(ga.nodes[i] for i in np.flatnonzero(np.isfinite(dist[0])))
            return DistanceBound(0.0, numerator, np.inf, (ga.nodes[eps[0]], ga.nodes[eps[t]]),
                                 reach)
        if not np.allclose(sums, sums[0], rtol=1e-9, atol=0):
            return DistanceBound(np.inf, numerator, np.nan, failure=(
                "symmetry claim failed a spot check: endpoints see different distance sums "
                f"{sums.tolist()}; the claim is wrong for this fabric"))
        denominator = T * self.gbps * float(sums[0])
        return DistanceBound(numerator / denominator if denominator > 0 else np.inf,
                             numerator, denominator)


def build_symmetric_lp(fab: Any, gbps: float, reduce: bool = True,
                       include_endpoint_links: bool = True, *, ga: GraphArrays | None = None,
                       symmetry: Any = None) -> SymmetricModel:
    """Build the root LP of uniform all-to-all on a fabric with a symmetry claim.

    ``reduce=False`` keeps one column per arc (no colour refinement), for checking.
    ``include_endpoint_links=False`` drops pairs under one switch and the capacity rows of
    orbits made only of endpoint links (see :func:`~fabricopt.flow.build_flow_lp`);
    automorphisms preserve "under the same switch", so the traffic stays invariant.
    ``ga`` and ``symmetry`` (the fabric's arrays and its checked claim) spare reading them
    again when the caller has them.
    """
    ga = ga or GraphArrays.from_fabric(fab)
    T = len(fab.endpoints)
    ep_idx = np.array([ga.index[e] for e in fab.endpoints])
    root = int(ep_idx[0])
    collapse = Collapse.of(ga, fab, tuple(fab.endpoints))
    dest = (np.ones(T, dtype=bool) if include_endpoint_links
            else collapse.attach != collapse.attach[0])
    dest[0] = False
    supply = np.zeros(ga.n_nodes)
    supply[ep_idx[dest]] = -gbps
    supply[root] = gbps * dest.sum()
    node_color = np.where(supply > 0, 0, np.where(supply < 0, 1, 2))
    oc = OrbitClasses.of(fab, ga, node_color, reduce, symmetry)
    n_orb = len(oc.orbit_size)
    constrained = np.ones(ga.n_arcs, dtype=bool)
    if not include_endpoint_links:
        constrained = collapse.core_arc.copy()
    # An orbit keeps its capacity row if any of its arcs is constrained (orbits do not mix
    # endpoint links with others: automorphisms preserve "hangs off one switch").
    row_orbit = np.flatnonzero(np.bincount(oc.orbit, weights=constrained, minlength=n_orb) > 0)
    A_flow, rep = class_conservation_rows(ga, oc.node_class, oc.arc_class)
    # One capacity row per orbit: (T/|O|) * sum over its classes of |C| * y_C <= c_O.
    row_of_orbit = np.full(n_orb, -1)
    row_of_orbit[row_orbit] = np.arange(len(row_orbit))
    keep = row_of_orbit[oc.class_orbit] >= 0
    A_orb = sp.csr_matrix(((T / oc.orbit_size[oc.class_orbit] * oc.class_size)[keep],
                           (row_of_orbit[oc.class_orbit][keep],
                            np.arange(oc.n_classes)[keep])),
                          shape=(len(row_orbit), oc.n_classes))
    lp = max_theta_lp(A_flow, supply[rep], A_orb, oc.orbit_cap[row_orbit])
    return SymmetricModel(lp, ga, root, gbps, ep_idx, oc, supply, row_orbit, constrained,
                          collapse.attach, include_endpoint_links)
