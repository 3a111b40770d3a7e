r"""Exact all-to-all throughput from one root flow per endpoint orbit, for fabrics with a
symmetry claim.

If the demand is invariant under a group of automorphisms (uniform all-to-all is invariant
under any), an optimal flow can be taken invariant. Let the group have orbits
:math:`O_1, \dots, O_k` on the endpoints (one orbit when it is transitive) and pick a root
:math:`r_i` in each. The root's flow :math:`f_i` determines the flow of every endpoint of its
orbit, and each arc orbit :math:`O` carries
:math:`\sum_i (|O_i|/|O|) \sum_{a \in O} f_i(a)` on each of its arcs (``docs/throughput.md``):

.. math::

    \max \theta \;\text{s.t.}\; \text{conservation of each } f_i \text{ with supply }
    \theta\, b_i,\quad \textstyle\sum_i \tfrac{|O_i|}{|O|} \sum_{a \in O} f_i(a) \le c_O
    \;\forall O.

With one orbit that is :math:`\tfrac{T}{|O|} \sum_{a \in O} f_0(a) \le c_O`. That LP has one
column per arc and root. Each root's block is reduced further by **colour refinement**
(Grohe, Kersting, Mladenov, Selman, "Dimension reduction via colour refinement", ESA
2014): starting from the root, the other endpoints, the switches and the arc orbits, nodes
and arcs are split until every node of a class has the same number of arcs of each class in
and out. Such an *equitable* partition reduces an LP exactly: a solution that is constant on
arc classes exists among the optimal ones, and any reduced solution lifts to a feasible one;
the blocks meet only in the orbit rows, whose coefficients are constant on each class, so the
partitions of the blocks together stay equitable for the whole LP.
The partition is checked to be equitable before use (hashes could collide), the lifted flows
are checked for conservation on the whole graph, and the upper bound comes from the dual
lengths through the distance bound, so the answer carries the same certificate as the full LP.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import dijkstra

from .._unchanged import once
from ..graph_arrays import GraphArrays
from .formulation import Collapse
from .lp import LinearProgram
from .model import DistanceBound, LiftedFlow, max_theta_lp

_RNG_SEED = 20_14  # fixed: refinement must be reproducible


def sorted_unique(values: np.ndarray) -> np.ndarray:
    """``np.unique(values)`` of a 1-D array (its distinct values, sorted) by one sort and a
    scan: numpy's own takes a hash path that was twenty times slower on 600,000 arc codes.

    >>> sorted_unique(np.array([5, 1, 5, 3, 1])).tolist()
    [1, 3, 5]
    """
    out = np.sort(np.asarray(values).ravel())
    if len(out) < 2:
        return out
    keep = np.empty(len(out), dtype=bool)
    keep[0] = True
    np.not_equal(out[1:], out[:-1], out=keep[1:])
    return out[keep]


def _dense(values: np.ndarray) -> np.ndarray:
    """Class ids 0..k-1 of a 1-D array, in sorted order of the values (one sort and a scan
    for changes, as :func:`sorted_unique`).

    >>> _dense(np.array([7, 3, 7, 5])).tolist()
    [2, 0, 2, 1]
    """
    values = np.asarray(values).ravel()
    out = np.empty(len(values), dtype=np.int64)
    if not len(values):
        return out
    if values.dtype.kind in "iu":
        # Integers within a few times their count: mark the values present and number them
        # by a running count (no sort; the same ids: the rank of each value among the
        # distinct ones). The arcs' final classes of a 15,360-GPU pod took a third of its
        # colour refinement sorted.
        low, high = int(values.min()), int(values.max())
        if high - low < 4 * len(values) + 4096:
            shifted = (values.astype(np.int64) - low if values.dtype.kind == "i" else
                       (values.astype(np.uint64) - np.uint64(low)).astype(np.int64))
            present = np.zeros(high - low + 1, dtype=bool)
            present[shifted] = True
            return (np.cumsum(present, dtype=np.int64) - 1)[shifted]
    order = np.argsort(values)
    ordered = values[order]
    changed = np.empty(len(values), dtype=bool)
    changed[0] = False
    np.not_equal(ordered[1:], ordered[:-1], out=changed[1:])
    out[order] = np.cumsum(changed)
    return out


def _packed(columns: tuple[np.ndarray, ...]) -> np.ndarray | None:
    """One integer per row of non-negative integer ``columns`` that sorts as the rows do
    (mixed radix, the first column most significant), or None when one is negative or the
    radices' product would not fit in 63 bits."""
    radices = []
    for col in columns:
        if col.dtype.kind not in "iu" or (len(col) and int(col.min()) < 0):
            return None
        radices.append(int(col.max()) + 1 if len(col) else 1)
    if math.prod(radices) >= 2**62:
        return None
    key = columns[0].astype(np.int64)
    for col, radix in zip(columns[1:], radices[1:], strict=True):
        key = key * radix + col.astype(np.int64)
    return key


def _relabel(*columns: np.ndarray) -> np.ndarray:
    """Dense class ids 0..k-1 for rows of the given integer columns, numbered in the
    lexicographic order of the rows (the first column first).

    Small non-negative columns are packed into one integer per row and sorted once (a
    quarter of a three-key sort on the 213,120 arcs of a 15,360-GPU pod); others take one
    stable multi-key sort and a scan for changes, instead of a sort per column: the
    symmetric LP of a 2:1 cluster refines 209 roots, and this was most of its build.

    >>> _relabel(np.array([1, 0, 1, 0]), np.array([2, 9, 2, 3])).tolist()  # (0, 3) first
    [2, 1, 2, 0]
    """
    if len(columns) == 1:
        return _dense(columns[0])
    packed = _packed(columns)
    if packed is not None:
        return _dense(packed)
    order = np.lexsort(columns[::-1])
    n = len(order)
    changed = np.zeros(n, dtype=bool)
    if n:
        changed[0] = True
        for col in columns:
            ordered = col[order]
            changed[1:] |= ordered[1:] != ordered[:-1]
    out = np.empty(n, dtype=np.int64)
    out[order] = np.cumsum(changed) - 1
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
    # Each arc's keys, the same every round (the arc colours do not change here).
    arc_out = key_arc[ac]
    arc_in = arc_out ^ np.uint64(0x9E3779B97F4A7C15)
    while True:
        key_node = rng.integers(1, 2**63, size=int(nc.max()) + 1, dtype=np.uint64)
        key_node |= np.uint64(1)
        # A node-class key times an odd arc key spreads each (arc colour, class) pair.
        w_out = arc_out * key_node[nc[ga.head]]
        w_in = arc_in * key_node[nc[ga.tail]]
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
        pairs = sorted_unique(ac * k + col)
        if len(sorted_unique(pairs // k)) != len(pairs):
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
        return cls.from_orbits(ga, fabric_arc_orbits(fab, ga, symmetry or fab.symmetry),
                               node_color, reduce)

    @classmethod
    def from_orbits(cls, ga: GraphArrays, orbit: np.ndarray, node_color: np.ndarray,
                    reduce: bool = True) -> OrbitClasses:
        """Classes of the arc orbits ``orbit`` (dense ids 0..k-1 per arc, from
        :func:`arc_orbits`) by colour refinement from ``node_color``, as in :meth:`of`."""
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


def arc_orbits(ga: GraphArrays, symmetry: Any) -> np.ndarray:
    """Dense orbit ids (0..k-1) of the arcs of ``ga`` under a symmetry claim: the codes its
    builder aligned with the graph (:class:`~fabricopt.symmetry_claim.ClaimOrder`) when
    ``ga`` has exactly those arcs in that order, else one lookup per arc."""
    order = getattr(symmetry, "__dict__", {}).get("_order")
    if order is not None and order.fits(ga.nodes, ga.tail, ga.head):
        return order.codes.copy()
    return _relabel(np.fromiter(map(symmetry.arc_orbit.__getitem__, ga.arcs), dtype=np.int64,
                                count=ga.n_arcs))


def fabric_arc_orbits(fab: Any, ga: GraphArrays, symmetry: Any) -> np.ndarray:
    """:func:`arc_orbits` of ``fab``'s arrays ``ga`` under its claim ``symmetry``, read once
    per study row (:func:`~fabricopt._unchanged.once`): every metric's symmetric method and
    the two-phase routing share it."""
    return once(fab, f"arc_orbits {id(symmetry)} {id(ga)}", lambda: arc_orbits(ga, symmetry))


def endpoint_orbits(symmetry: Any, endpoints: tuple[Any, ...]) -> np.ndarray:
    """Orbit id of each endpoint (by position), numbered in order of first appearance, so
    orbit ``i``'s root, its first endpoint, comes before orbit ``i + 1``'s; all zeros when the
    group is transitive."""
    if not endpoints:
        return np.zeros(0, dtype=np.int64)
    if symmetry is None or symmetry.endpoint_orbit is None:
        return np.zeros(len(endpoints), dtype=np.int64)
    labels = [symmetry.endpoint_orbit[e] for e in endpoints]
    first = {lab: i for i, lab in enumerate(dict.fromkeys(labels))}
    return np.array([first[lab] for lab in labels], dtype=np.int64)


def invariant_loads(orbit: np.ndarray, orbit_size: np.ndarray, n_sources: Any,
                    flows: np.ndarray) -> np.ndarray:
    """Load on every arc when the sources of each endpoint orbit route like its root.

    ``flows`` is one root flow per arc (1-D) or one row per root (2-D), ``n_sources`` the size
    of each root's endpoint orbit. Arc ``a`` of orbit ``O`` carries
    ``sum_i (n_i/|O|) sum_{a' in O} f_i(a')``.
    """
    flows = np.atleast_2d(flows)
    sizes = np.broadcast_to(np.asarray(n_sources, dtype=float), (len(flows),))
    total = np.zeros(len(orbit_size))
    for n_i, f in zip(sizes, flows, strict=True):
        total += n_i * np.bincount(orbit, weights=f, minlength=len(orbit_size))
    return (total / orbit_size)[orbit]


def conservation_residual(ga: GraphArrays, flow: np.ndarray, net_supply: np.ndarray) -> float:
    """L1 norm of (out - in) - supply over the nodes, for one flow on the arcs."""
    n = ga.n_nodes
    net = (np.bincount(ga.tail, weights=flow, minlength=n)
           - np.bincount(ga.head, weights=flow, minlength=n))
    return float(np.abs(net - net_supply).sum())


@dataclass(frozen=True)
class RootBlock:
    """One endpoint orbit's root and its block of the symmetric LP.

    ``position`` is the root's place in ``fab.endpoints`` (the first endpoint of its orbit),
    ``orbit_size`` the endpoints of the orbit, ``dest`` the mask over endpoints of the root's
    targets, ``supply`` its supply per node per unit theta, ``classes`` the colour refinement
    of its LP, and ``columns`` the block's columns in the LP.
    """

    position: int
    node: int
    orbit_size: int
    dest: np.ndarray
    supply: np.ndarray
    classes: OrbitClasses
    columns: slice

    def flow(self, x: np.ndarray) -> np.ndarray:
        """The root's flow on every arc from a point of the LP."""
        return self.classes.lift(x[self.columns])


@dataclass(frozen=True)
class SymmetricModel:
    """The reduced root LP and the maps to lift its answer to every arc of the fabric.

    Follows :class:`~fabricopt.flow.model.ThroughputModel`; the lifted flow is the roots'
    flows on every arc, root after root (one root per endpoint orbit, in orbit order).
    """

    lp: LinearProgram
    ga: GraphArrays
    gbps: float                    # demand per ordered pair
    endpoint_idx: np.ndarray       # node index of each endpoint, in fab.endpoints order
    endpoint_orbit: np.ndarray     # orbit of each endpoint (position), dense, roots first-seen
    orbit: np.ndarray              # arc orbit of each arc (dense ids)
    orbit_size: np.ndarray         # arcs per orbit
    roots: tuple[RootBlock, ...]
    row_orbit: np.ndarray          # orbit of each capacity row
    constrained: np.ndarray        # arcs whose orbit has a capacity row
    attach: np.ndarray             # where each endpoint enters the core graph
    include_endpoint_links: bool
    spot_checks: int = 2

    @property
    def n_endpoints(self) -> int:
        return len(self.endpoint_idx)

    @property
    def root(self) -> int:
        """Node index of the first root (the first endpoint)."""
        return self.roots[0].node

    @property
    def reduced(self) -> bool:
        """True when every root's block is reduced by colour refinement."""
        return all(b.classes.reduced for b in self.roots)

    @property
    def min_demand(self) -> float:
        return self.gbps

    @property
    def mean_out_gbps(self) -> float:
        """Demand each sending endpoint sends per unit theta (Gb/s), on average."""
        sent = sum(b.orbit_size * float(b.dest.sum()) for b in self.roots)
        senders = sum(b.orbit_size for b in self.roots if b.dest.any())
        return self.gbps * sent / max(senders, 1)

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

    def loads(self, flows: np.ndarray) -> np.ndarray:
        """Gb/s on every arc when every endpoint routes like its orbit's root (invariant
        flow); ``flows`` has one row per root."""
        return invariant_loads(self.orbit, self.orbit_size,
                               [b.orbit_size for b in self.roots], flows)

    def residual(self, flows: np.ndarray, theta: float) -> float:
        """Largest L1 norm of the conservation violation of a lifted root flow on the whole
        graph (each image of a root's flow violates conservation by as much)."""
        return max(conservation_residual(self.ga, f, theta * b.supply)
                   for b, f in zip(self.roots, flows, strict=True))

    def lift(self, x: np.ndarray) -> LiftedFlow:
        flows = np.stack([b.flow(x) for b in self.roots])
        theta = float(x[-1])
        return LiftedFlow(theta, self.loads(flows), self.residual(flows, theta),
                          flows.ravel())

    def arc_lengths(self, dual_ub: np.ndarray) -> np.ndarray:
        """Arc lengths from the orbit-row duals: ``(T/|O|) max(-y_O, 0)`` on each arc of
        ``O`` (duals of a minimisation's ``<=`` rows are non-positive; noise of the wrong sign
        is dropped)."""
        y = np.zeros(len(self.orbit_size))
        y[self.row_orbit] = np.clip(-dual_ub[: self.n_orbit_rows], 0.0, None)
        return (self.n_endpoints / self.orbit_size * y)[self.orbit]

    def spot_check_positions(self, block: RootBlock) -> list[int]:
        """Up to ``spot_checks`` other endpoints of ``block``'s orbit, spread over it."""
        members = np.flatnonzero(self.endpoint_orbit == self.endpoint_orbit[block.position])
        n = len(members)
        if n < 2:
            return []
        picks = {int(i) for i in np.linspace(0, n - 1, self.spot_checks + 2)[1:-1]} | {n - 1}
        picks.discard(0)
        return [int(members[i]) for i in sorted(picks)[: self.spot_checks]]

    def length_bound(self, lengths: np.ndarray) -> DistanceBound:
        """Distance bound of invariant lengths: ``sum_i |O_i| x`` (root ``i``'s distance sum),
        with each sum spot-checked at other endpoints of its orbit (a wrong claim shows up as
        different sums)."""
        ga, eps = self.ga, self.endpoint_idx
        checks = [self.spot_check_positions(b) for b in self.roots]
        picks = [b.position for b in self.roots] + [i for c in checks for i in c]
        dist = dijkstra(ga.matrix(lengths), directed=True, indices=eps[picks])
        sums = np.array([dist[j, eps[self.destinations(i)]].sum()
                         for j, i in enumerate(picks)])
        numerator = float(ga.capacity @ lengths)
        k = len(self.roots)
        far = np.flatnonzero(np.isinf(sums[:k]))
        if len(far):
            j = int(far[0])
            dest = self.destinations(self.roots[j].position)
            t = int(np.flatnonzero(dest & np.isinf(dist[j, eps]))[0])
            reach = frozenset(ga.nodes[i] for i in np.flatnonzero(np.isfinite(dist[j])))
            return DistanceBound(0.0, numerator, np.inf,
                                 (ga.nodes[self.roots[j].node], ga.nodes[eps[t]]), reach)
        start = k
        for j, c in enumerate(checks):
            seen = sums[start: start + len(c)]
            start += len(c)
            if not np.allclose(seen, sums[j], rtol=1e-9, atol=0):
                return DistanceBound(np.inf, numerator, np.nan, failure=(
                    "symmetry claim failed a spot check: endpoints of one orbit see different "
                    f"distance sums {[float(sums[j]), *seen.tolist()]}; the claim is wrong "
                    "for this fabric"))
        sizes = np.array([b.orbit_size for b in self.roots], dtype=float)
        denominator = self.gbps * float(sizes @ sums[:k])
        return DistanceBound(numerator / denominator if denominator > 0 else np.inf,
                             numerator, denominator)


def build_symmetric_lp(fab: Any, gbps: float, reduce: bool = True,
                       include_endpoint_links: bool = True, *, ga: GraphArrays | None = None,
                       symmetry: Any = None, assemble: bool = True) -> SymmetricModel:
    """Build the root LP of uniform all-to-all on a fabric with a symmetry claim.

    One root per orbit of the group on the endpoints (one root when the group is transitive),
    each with its own flow; the blocks share one capacity row per arc orbit.
    ``reduce=False`` keeps one column per arc and root (no colour refinement), for checking.
    ``include_endpoint_links=False`` drops pairs under one switch and the capacity rows of
    orbits made only of endpoint links (see :func:`~fabricopt.flow.build_flow_lp`);
    automorphisms preserve "under the same switch", so the traffic stays invariant.
    ``ga`` and ``symmetry`` (the fabric's arrays and its checked claim) spare reading them
    again when the caller has them. ``assemble=False`` leaves the LP empty: the model then
    only lifts a point and bounds lengths (a feasible point built otherwise, or a check).

    Examples
    --------
    >>> import fabricopt as fo
    >>> model = build_symmetric_lp(fo.ring(6), 1.0)
    >>> len(model.roots), model.reduced   # transitive: one root, reduced by refinement
    (1, True)
    """
    ga = ga or GraphArrays.from_fabric(fab)
    sym = symmetry or fab.symmetry
    T = len(fab.endpoints)
    ep_idx = np.fromiter(map(ga.index.__getitem__, fab.endpoints), dtype=np.int64,
                         count=len(fab.endpoints))
    collapse = Collapse.of(ga, fab, tuple(fab.endpoints))
    orbit = fabric_arc_orbits(fab, ga, sym)
    orbit_size = np.bincount(orbit).astype(float)
    n_orb = len(orbit_size)
    ep_orbit = endpoint_orbits(sym, tuple(fab.endpoints))
    ep_orbit_size = np.bincount(ep_orbit)
    constrained = np.ones(ga.n_arcs, dtype=bool)
    if not include_endpoint_links:
        constrained = collapse.core_arc.copy()
    # An orbit keeps its capacity row if any of its arcs is constrained (orbits do not mix
    # endpoint links with others: automorphisms preserve "hangs off one switch").
    row_orbit = np.flatnonzero(np.bincount(orbit, weights=constrained, minlength=n_orb) > 0)
    row_of_orbit = np.full(n_orb, -1)
    row_of_orbit[row_orbit] = np.arange(len(row_orbit))
    roots: list[RootBlock] = []
    flow_blocks, supplies, cap_blocks = [], [], []
    col = 0
    for i, pos in enumerate(np.unique(ep_orbit, return_index=True)[1]):
        pos = int(pos)
        dest = (np.ones(T, dtype=bool) if include_endpoint_links
                else collapse.attach != collapse.attach[pos])
        dest[pos] = False
        supply = np.zeros(ga.n_nodes)
        supply[ep_idx[dest]] = -gbps
        supply[ep_idx[pos]] = gbps * dest.sum()
        node_color = np.where(supply > 0, 0, np.where(supply < 0, 1, 2))
        oc = OrbitClasses.from_orbits(ga, orbit, node_color, reduce)
        size = int(ep_orbit_size[i])
        if assemble:
            A_flow, rep = class_conservation_rows(ga, oc.node_class, oc.arc_class)
            # This root's share of orbit O's row: (|O_i|/|O|) * sum over its classes of
            # |C| y_C.
            keep = row_of_orbit[oc.class_orbit] >= 0
            cap_blocks.append(sp.csr_matrix(
                ((size / orbit_size[oc.class_orbit] * oc.class_size)[keep],
                 (row_of_orbit[oc.class_orbit][keep], np.arange(oc.n_classes)[keep])),
                shape=(len(row_orbit), oc.n_classes)))
            flow_blocks.append(A_flow)
            supplies.append(supply[rep])
        roots.append(RootBlock(pos, int(ep_idx[pos]), size, dest, supply, oc,
                               slice(col, col + oc.n_classes)))
        col += oc.n_classes
    if assemble:
        lp = max_theta_lp(sp.block_diag(flow_blocks, format="csr"), np.concatenate(supplies),
                          sp.hstack(cap_blocks, format="csr"),
                          _orbit_capacity(ga, orbit, n_orb)[row_orbit])
    else:  # the model lifts and bounds a point; its LP is left empty
        lp = max_theta_lp(sp.csr_matrix((0, col)), np.zeros(0),
                          sp.csr_matrix((0, col)), np.zeros(0))
    return SymmetricModel(lp, ga, gbps, ep_idx, ep_orbit, orbit, orbit_size, tuple(roots),
                          row_orbit, constrained, collapse.attach, include_endpoint_links)


def _orbit_capacity(ga: GraphArrays, orbit: np.ndarray, n_orb: int) -> np.ndarray:
    """Capacity of each orbit's arcs (one value: automorphisms preserve capacities)."""
    cap = np.zeros(n_orb)
    cap[orbit] = ga.capacity
    return cap
