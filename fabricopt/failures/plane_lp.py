r"""The LP that routes all-to-all traffic through the planes of a Clos of servers.

Every pair of GPUs in two different groups of leaves (:mod:`fabricopt.failures.planes`) climbs to
one of the planes and comes down from it. The share of plane :math:`p` for a pair whose GPUs
live on leaves :math:`a` and :math:`b`, in zones :math:`y` and :math:`z`, is

.. math:: s(a, b, p) = \alpha_{a p} + \beta_{b p} + \gamma_{y z p},

a zone pair's split over the planes (:math:`\gamma \ge 0`, summing to one) moved by the
source leaf (:math:`\alpha`) and the target leaf (:math:`\beta`), each summing to zero over
the planes. A leaf that lost an uplink sends less on that plane and more on the others; a
leaf with room takes more. Every share stays at least 0 because the smallest
:math:`\alpha` of each zone, the smallest :math:`\beta` of each zone and :math:`\gamma` add up
to at least 0. A pair in one group (leaves tied by servers that span them) either climbs
(a share per plane and pair of leaves) or is relayed across those servers; a pair on one
leaf turns there; a pair in one server stays on its NVSwitches. A spanning server's own relayed
traffic may leave (arrive) by its NIC on the next leaf of the relay, over its NVSwitches,
rather than cross that hop through the servers spanning it (:meth:`_PlaneLP.shortcuts`): on
a failed 4,096-GPU Clos the one server spanning two leaves, 400 Gb/s of NIC on one and 2,800
on the other, otherwise carried its own GPU's relays down and up its 400 Gb/s NIC.

What a pair sends on a plane leaves its server over one of a few *routes* to the plane's
switch in its zone (its own leaf's uplink; a spanning server's NICs to the next leaf's; or,
where its leaf lost the uplink, up another plane and down a neighbour leaf), in shares the
LP picks for the server's class (servers hung from the same leaves alike), and between zones
it crosses the plane's hubs in shares the LP picks too. Every load is linear in these
choices, so one LP minimises the most loaded link. Its solution is a routing;
:mod:`fabricopt.failures.plane_routing` turns it into flows and proves them.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field, replace

import numpy as np
import scipy.sparse as sp

from ..flow.backends import highspy_available, solve_lp
from ..flow.budget import now
from ..flow.lp import LinearProgram, LPSolution
from .plane_lp_size import refused, route_nonzeros
from .plane_routes import (
    Classes,
    PlaneRoutes,
    Route,
    bounce_arcs,
    leaf_neighbours,
    leaf_path,
    plane_routes,
    relay_hops,
    server_classes,
)
from .plane_vertex import crossed_over
from .planes import Planes

#: The interior point's relative optimality tolerance (see :func:`solve_planes`).
IPM_TOLERANCE = 1e-4



@dataclass(frozen=True)
class Counts:
    """Endpoint counts the shares are weighed with."""

    n: int  # endpoints
    home: np.ndarray  # per leaf: endpoints homed there
    server_home: dict[tuple[int, int], int]  # (server, leaf) -> endpoints
    group: np.ndarray  # per group: endpoints
    zone_group: dict[tuple[int, int], int]  # (zone, group) -> endpoints
    zone: np.ndarray  # per zone
    pairs: np.ndarray  # (k, 2) ordered pairs of distinct leaves of one group with demand
    pair_demand: np.ndarray  # per pair: endpoint pairs between them, not in one server

    def outside_zone(self, z: int, g: int) -> int:
        """Endpoints of zone ``z`` outside group ``g``."""
        return int(self.zone[z]) - self.zone_group.get((z, g), 0)


def counts(pl: Planes) -> Counts:
    """:class:`Counts` of ``pl``."""
    nl = pl.n_leaves
    home = np.bincount(pl.home, minlength=nl)
    server_home: dict[tuple[int, int], int] = defaultdict(int)
    for s, h in zip(pl.server.tolist(), pl.home.tolist(), strict=True):
        server_home[(s, h)] += 1
    n_groups = int(pl.leaf_group.max()) + 1
    group = np.bincount(pl.leaf_group, weights=home, minlength=n_groups).astype(np.int64)
    zone = np.bincount(pl.leaf_zone, weights=home, minlength=pl.n_zones).astype(np.int64)
    zone_group: dict[tuple[int, int], int] = defaultdict(int)
    for leaf in range(nl):
        zone_group[(int(pl.leaf_zone[leaf]), int(pl.leaf_group[leaf]))] += int(home[leaf])
    # Same-server corrections between two leaves of a group.
    shared: dict[tuple[int, int], int] = defaultdict(int)
    by_server: dict[int, list[tuple[int, int]]] = defaultdict(list)
    for (s, h), c in server_home.items():
        by_server[s].append((h, c))
    for parts in by_server.values():
        for a, ca in parts:
            for b, cb in parts:
                if a != b:
                    shared[(a, b)] += ca * cb
    pairs, demand = [], []
    for g in range(n_groups):
        leaves = [int(x) for x in np.flatnonzero(pl.leaf_group == g) if home[x] > 0]
        for a in leaves:
            for b in leaves:
                if a != b:
                    d = int(home[a]) * int(home[b]) - shared.get((a, b), 0)
                    if d > 0:
                        pairs.append((a, b))
                        demand.append(d)
    return Counts(len(pl.endpoints), home, dict(server_home), group, dict(zone_group), zone,
                  np.array(pairs, dtype=np.int64).reshape(-1, 2),
                  np.array(demand, dtype=float))


@dataclass(frozen=True)
class PlaneSolution:
    """The routing the LP chose (see the module docstring); ``theta`` its throughput as a
    fraction of one unit of demand per endpoint pair, in Gb/s of capacity."""

    status: str
    message: str
    alpha: np.ndarray  # (leaves, planes)
    beta: np.ndarray
    gamma: np.ndarray  # (zones, zones, planes)
    climb: np.ndarray  # (intra-group pairs, planes)
    relay: np.ndarray  # (intra-group pairs,)
    exits: tuple[np.ndarray, ...]  # per PlaneRoutes entry: share of each route
    entries: tuple[np.ndarray, ...]
    hubs: dict[tuple[int, int, int], np.ndarray]  # (zone, zone, plane) -> share per hub
    relay_leaves: np.ndarray
    lp_size: dict[str, int]
    #: What the LP's optimum promises per endpoint (Gb/s out, before the flows are proven).
    lp_gbps: float = 0.0
    #: (class, pair, entry) -> the share of what the class's endpoints relay for that pair
    #: that takes their server's own NIC on the far end of the hop instead
    #: (:meth:`_PlaneLP.shortcuts`).
    shortcut: dict[tuple[int, int, bool], float] | None = None
    #: The LP's own point, duals with it (what :func:`vertex_solution` starts from).
    point: LPSolution | None = field(default=None, repr=False, compare=False)


class _Builder:
    """Rows and columns of the LP, added by name."""

    def __init__(self) -> None:
        self.n_cols = 0
        self.free: list[int] = []
        self.ub_rows: dict[tuple, int] = {}
        self.ub_entries: list[tuple[int, int, float]] = []
        self.ub_const: dict[int, float] = defaultdict(float)
        self.ub_cap: dict[int, float] = {}
        self.eq_entries: list[tuple[int, int, float]] = []
        self.eq_rhs: list[float] = []
        self.le_entries: list[tuple[int, int, float]] = []  # rows <= 0, apart from loads
        self.n_le = 0

    def col(self, free: bool = False) -> int:
        self.n_cols += 1
        if free:
            self.free.append(self.n_cols - 1)
        return self.n_cols - 1

    def cols(self, n: int, free: bool = False) -> np.ndarray:
        out = np.arange(self.n_cols, self.n_cols + n)
        self.n_cols += n
        if free:
            self.free.extend(out.tolist())
        return out

    def load_row(self, key: tuple, capacity: float) -> int:
        row = self.ub_rows.get(key)
        if row is None:
            row = self.ub_rows[key] = len(self.ub_rows)
            self.ub_cap[row] = capacity
        return row

    def load(self, key: tuple, capacity: float, terms: list[tuple[int, float]],
             scale: float) -> None:
        row = self.load_row(key, capacity)
        self.ub_entries.extend((row, c, v * scale) for c, v in terms)

    def const_load(self, key: tuple, capacity: float, value: float) -> None:
        self.ub_const[self.load_row(key, capacity)] += value

    def eq(self, terms: list[tuple[int, float]], rhs: float = 0.0) -> None:
        row = len(self.eq_rhs)
        self.eq_rhs.append(rhs)
        self.eq_entries.extend((row, c, v) for c, v in terms)

    def le(self, terms: list[tuple[int, float]]) -> None:
        self.le_entries.extend((self.n_le, c, v) for c, v in terms)
        self.n_le += 1


@dataclass(frozen=True)
class BuiltPlaneLP:
    """The planes' LP as :func:`solve_planes` built it, with what turns a point of it into
    a :class:`PlaneSolution` (kept so that a point can be carried further without a second
    build: :func:`vertex_solution`)."""

    pl: Planes
    lp: LinearProgram
    cols: _Columns
    unit: float
    routes: PlaneRoutes
    cl: Classes
    ct: Counts
    relay_leaves: np.ndarray

    def solution(self, point: LPSolution) -> PlaneSolution:
        """The routing ``point`` (a solve of :attr:`lp` with a point) describes."""
        lp = self.lp
        size = {"rows": lp.n_rows, "columns": lp.n_cols, "nonzeros": lp.nnz}
        out = _solution(self.pl, self.ct, self.routes, self.cols, point.x, point.status,
                        point.message, self.relay_leaves, size, one_hop_pairs(self.cl, self.ct))
        lam = point.x[self.cols.lam]   # a vertex may hold 0: it promises nothing then
        return replace(out, lp_gbps=self.unit / lam if lam > 0 else 0.0, point=point)


def solve_planes(pl: Planes, relay_leaves: np.ndarray | None = None,
                 time_limit: float | None = None, reserve: float = 0.0,
                 tolerance: float = IPM_TOLERANCE,
                 read: tuple[Classes, PlaneRoutes] | None = None
                 ) -> tuple[PlaneSolution | None, BuiltPlaneLP | None]:
    """Build and solve the LP of the module docstring: its routing (None when the LP was
    not begun or stopped without a point) and the LP as built (None when it was refused
    before its assembly). ``relay_leaves`` (a mask over the leaves; default: those that
    lost an uplink) get relayed routes; ``tolerance``: the interior point's relative
    optimality tolerance; ``read``: ``pl``'s server classes and their routes over
    ``relay_leaves`` when the caller has them (:func:`server_classes`,
    :func:`plane_routes`), so that they are not read again.

    ``time_limit`` (seconds, None: none) is for the build and the solve together, less
    ``reserve`` times what the build took (what the caller needs after it: the proof of
    the routing costs about as much as its build); the LP is not begun (no solution, None)
    when what is left is less than it is expected to take, nor, without a limit, above
    :data:`~fabricopt.failures.plane_lp_size.UNTIMED_MAX_NONZEROS` nonzeros
    (:func:`~fabricopt.failures.plane_lp_size.refused`)."""
    start = now()
    if relay_leaves is None:
        relay_leaves = ((pl.up < 0) | (pl.down < 0)).any(axis=1)
    if read is None:
        cl = server_classes(pl)
        read = cl, plane_routes(pl, cl, relay_leaves)
    cl, routes = read
    ct = counts(pl)
    # The routes' own nonzeros (a lower bound, read in milliseconds) refuse an LP too large
    # before its assembly (8 s of a 1.8-million-nonzero LP on superpod(16) minus 5 %); the
    # assembled LP's count decides the rest, as before.
    if refused(route_nonzeros(pl, cl, routes), time_limit, now() - start, reserve):
        return None, None
    lp, cols, unit = _plane_lp(pl, cl, ct, routes)
    built_lp = BuiltPlaneLP(pl, lp, cols, unit, routes, cl, ct, relay_leaves)
    built = now() - start
    if refused(lp.nnz, time_limit, built, reserve):
        return None, built_lp
    if time_limit is not None:
        time_limit -= built * (1.0 + reserve)
    # Interior point without crossover, stopped at a relative gap of 1e-4: its point is
    # proven by the flow it describes, not by its optimality (on a failed 4,096-GPU 2:1
    # Clos: 7.9 s against 32 s by scipy's HiGHS, 13 s at the default tolerance, the
    # proven rate the same to 8 digits). HiGHS may then call its status unknown: the point
    # is kept whatever the status, as long as there is one.
    sol = (solve_lp(lp, "highspy", time_limit, solver="ipm", run_crossover="off",
                    ipm_optimality_tolerance=tolerance)
           if highspy_available() else solve_lp(lp, "highs", time_limit))
    if sol.x is None or not np.isfinite(sol.x).all():
        return None, built_lp
    return built_lp.solution(sol), built_lp


def vertex_solution(built: BuiltPlaneLP, sol: PlaneSolution, time_limit: float | None = None
                    ) -> PlaneSolution | None:
    """The routing of the vertex crossover reaches from ``sol``'s interior point of
    ``built`` (:func:`~fabricopt.failures.plane_vertex.crossed_over`), without building or
    solving the LP again: where the point stopped just short of an optimum it is the
    optimum itself. None when there is no vertex (no point, no highspy, ``time_limit``
    spent)."""
    if sol.point is None:
        return None
    x = crossed_over(built.lp, sol.point, time_limit)
    if x is None:
        return None
    return built.solution(LPSolution("vertex", "crossover from the interior point", x))


@dataclass(frozen=True)
class _Columns:
    alpha: np.ndarray
    beta: np.ndarray
    gamma: dict[tuple[int, int], np.ndarray]
    climb: tuple[np.ndarray, np.ndarray]
    relay: np.ndarray
    exits: list[np.ndarray]
    entries: list[np.ndarray]
    hubs: dict[tuple[int, int, int], np.ndarray]
    lam: int
    a_zone: np.ndarray
    b_zone: np.ndarray
    #: (class, pair, entry) -> (column, its most per server at a relay share of one).
    shortcut: dict[tuple[int, int, bool], tuple[int, float]]


def _plane_lp(pl: Planes, cl: Classes, ct: Counts, routes: PlaneRoutes
              ) -> tuple[LinearProgram, _Columns, float]:
    """The LP, its columns, and the capacity unit (every capacity is divided by it and each
    endpoint pair asks ``1 / n``, so that the optimum is near one)."""
    lp = _PlaneLP(pl, cl, ct)
    lp.shares()
    lp.per_endpoint_volumes()
    exits, entries = lp.routes(routes)
    lp.inside_groups()
    lp.shortcuts()
    hubs = lp.hubs()
    c = lp.c
    return (_assemble(lp.b, c["lam"]),
            _Columns(c["alpha"], c["beta"], c["gamma"], c["climb"], c["relay"], exits, entries,
                     hubs, c["lam"], c["a_zone"], c["b_zone"], c["shortcut"]), lp.unit)


class _PlaneLP:
    """The rows and columns of :func:`_plane_lp`, added part by part; ``c`` names the
    columns."""

    def __init__(self, pl: Planes, cl: Classes, ct: Counts) -> None:
        self.b = _Builder()
        self.pl, self.ct = pl, ct
        self.d0 = 1.0 / max(ct.n - 1, 1)
        nic_caps = np.concatenate([c for c in cl.cap_up] + [c for c in cl.cap_down])
        self.unit = float(np.max(nic_caps)) if len(nic_caps) else 1.0
        self.cap = pl.ga.capacity / self.unit
        self.cl = replace(cl, cap_up=tuple(c / self.unit for c in cl.cap_up),
                          cap_down=tuple(c / self.unit for c in cl.cap_down))
        self.group_leaves: dict[int, list[int]] = defaultdict(list)
        for leaf in range(pl.n_leaves):
            self.group_leaves[int(pl.leaf_group[leaf])].append(leaf)
        self.pair_index = {(int(a), int(c)): i for i, (a, c) in enumerate(ct.pairs)}
        self.reps = _class_representatives(cl)
        self.c: dict = {}

    def shares(self) -> None:
        """The shares of the module docstring and what ties them: each pair's sum to one."""
        b, pl, ct, c = self.b, self.pl, self.ct, self.c
        nl, nz, npl = pl.n_leaves, pl.n_zones, pl.n_planes
        home, zone_of = ct.home, pl.leaf_zone
        # Leaves alike share their shifts (columns): see leaf_kinds.
        kind, n_kinds = leaf_kinds(pl)
        alpha = c["alpha"] = b.cols(n_kinds * npl).reshape(n_kinds, npl)[kind]
        beta = c["beta"] = b.cols(n_kinds * npl).reshape(n_kinds, npl)[kind]
        a_sum, b_sum = c["a_sum"], c["b_sum"] = b.cols(npl), b.cols(npl)
        a_zone, b_zone = c["a_zone"], c["b_zone"] = b.cols(nz), b.cols(nz)
        # Zone pairs with demand between different groups.
        dz = np.zeros((nz, nz))
        for leaf in range(nl):
            for z2 in range(nz):
                dz[zone_of[leaf], z2] += home[leaf] * ct.outside_zone(
                    z2, int(pl.leaf_group[leaf]))
        gamma = c["gamma"] = {}
        for z1, z2 in zip(*np.nonzero(dz > 0), strict=True):
            gamma[(int(z1), int(z2))] = cols = b.cols(npl)
            b.eq([(int(x), 1.0) for x in cols]
                 + [(int(a_zone[z1]), 1.0), (int(b_zone[z2]), 1.0)], 1.0)
        for leaf in np.unique(kind, return_index=True)[1].tolist():
            z = int(zone_of[leaf])
            b.eq([(int(x), 1.0) for x in alpha[leaf]] + [(int(a_zone[z]), -1.0)])
            b.eq([(int(x), 1.0) for x in beta[leaf]] + [(int(b_zone[z]), -1.0)])
        for p in range(npl):
            b.eq([(int(a_sum[p]), 1.0)] + [(int(alpha[x, p]), -float(home[x]))
                                           for x in range(nl)])
            b.eq([(int(b_sum[p]), 1.0)] + [(int(beta[x, p]), -float(home[x]))
                                           for x in range(nl)])
        # Pairs of leaves in one group: a pair (a, c) climbs plane p with share
        # climb_out[a, p] + climb_in[c, p] and is relayed with what is left.
        climb = c["climb"] = (b.cols(nl * npl).reshape(nl, npl),
                              b.cols(nl * npl).reshape(nl, npl))
        relay = c["relay"] = b.cols(len(ct.pairs))
        for i, (a, z) in enumerate(ct.pairs.tolist()):
            b.eq([(int(x), 1.0) for x in climb[0][a]] + [(int(x), 1.0) for x in climb[1][z]]
                 + [(int(relay[i]), 1.0)], 1.0)
        c["lam"] = b.col()

    def per_endpoint_volumes(self) -> None:
        """What one endpoint homed on leaf h sends up (receives down) plane p, named once
        as a column so that the routes refer to it rather than repeat it."""
        b, pl, ct, c = self.b, self.pl, self.ct, self.c
        nl, npl, n, home = pl.n_leaves, pl.n_planes, ct.n, ct.home
        per_endpoint = c["per_endpoint"] = (np.full((nl, npl), -1), np.full((nl, npl), -1))
        named: dict[tuple, int] = {}
        for h in np.flatnonzero(home > 0).tolist():
            g, z = int(pl.leaf_group[h]), int(pl.leaf_zone[h])
            for p in range(npl):
                if pl.port[z, p] < 0:
                    continue
                for entry in (False, True):
                    own, other, total = ((c["beta"], c["alpha"], c["a_sum"]) if entry
                                         else (c["alpha"], c["beta"], c["b_sum"]))
                    terms = [(int(own[h, p]), float(n - ct.group[g])), (int(total[p]), 1.0)]
                    terms += [(int(other[x, p]), -float(home[x]))
                              for x in self.group_leaves[g]]
                    for z2 in range(pl.n_zones):
                        key = (z2, z) if entry else (z, z2)
                        if key in c["gamma"]:
                            terms.append((int(c["gamma"][key][p]),
                                          float(ct.outside_zone(z2, g))))
                    for x in self.group_leaves[g]:
                        terms += self._climb(x, h, p, float(home[x]), entry)
                    # Leaves alike (same kinds and counts around them) share the column.
                    merged: dict[int, float] = defaultdict(float)
                    for col, v in terms:
                        merged[col] += v * self.d0
                    key = tuple(sorted(merged.items()))
                    col = named.get(key)
                    if col is None:
                        col = named[key] = b.col()  # a sum of shares: never below 0
                        b.eq([(col, -1.0)] + list(key))
                    per_endpoint[entry][h, p] = col

    def _climb(self, x: int, h: int, p: int, w: float, entry: bool
               ) -> list[tuple[int, float]]:
        """``w`` times the share of plane ``p`` climbed from ``h`` to ``x`` (``entry``:
        from ``x`` to ``h``); nothing when the two are no pair of one group."""
        a, c = (x, h) if entry else (h, x)
        if (a, c) not in self.pair_index:
            return []
        return _climb_terms(self.c["climb"], a, c, p, w)

    def _volume(self, k: int, z: int, p: int, entry: bool) -> list[tuple[int, float]]:
        """A server of class ``k``'s volume on plane ``p`` for its homes in zone ``z``:
        its endpoints' (less what they send each other inside the server)."""
        pl, ct = self.pl, self.ct
        terms: list[tuple[int, float]] = []
        for h, m in self.cl.homes[k].items():
            if pl.leaf_zone[h] != z:
                continue
            terms.append((int(self.c["per_endpoint"][entry][h, p]), float(m)))
            for x in self.group_leaves[int(pl.leaf_group[h])]:
                inside = ct.server_home.get((self.reps[k], x), 0)
                if inside:
                    terms += self._climb(x, h, p, -m * inside * self.d0, entry)
        return terms

    def routes(self, routes: PlaneRoutes) -> tuple[list[np.ndarray], list[np.ndarray]]:
        """Each class's volume on each plane over its routes (one route: no column)."""
        b, pl, cl = self.b, self.pl, self.cl
        exits, entries = [], []
        for (k, z, p), rts in zip(routes.keys, routes.routes, strict=True):
            for entry in (False, True):
                terms = self._volume(k, z, p, entry)
                if len(rts) == 1:
                    cols_r = np.array([-1])
                    _route_loads(b, pl, cl, k, p, rts[0], entry, terms, 1.0, self.cap)
                else:  # no route at all: the row says the volume is zero
                    cols_r = b.cols(len(rts))
                    b.eq([(int(c), 1.0) for c in cols_r] + [(c, -v) for c, v in terms])
                    for c, rt in zip(cols_r, rts, strict=True):
                        _route_loads(b, pl, cl, k, p, rt, entry, [(int(c), 1.0)], 1.0,
                                     self.cap)
                (entries if entry else exits).append(cols_r)
        return exits, entries

    def inside_groups(self) -> None:
        """A server's traffic that turns at a leaf (same leaf) or is relayed to another leaf
        of its group leaves and enters over its own NICs there; a relay between two leaves
        crosses the spanning servers, leaf to leaf."""
        b, pl, cl, ct, d0 = self.b, self.pl, self.cl, self.ct, self.d0
        home, relay = ct.home, self.c["relay"]
        for k in range(len(cl.size)):
            s_rep = self.reps[k]
            for h, m in cl.homes[k].items():
                same = m * (home[h] - ct.server_home.get((s_rep, h), 0)) * d0
                row_cap = _nic_cap(cl, k, h)
                for entry in (False, True):
                    key = ("nic", k, h, "down" if entry else "up")
                    b.const_load(key, row_cap[1 if entry else 0], same)
                    terms = []
                    for x in self.group_leaves[int(pl.leaf_group[h])]:
                        i = self.pair_index.get((x, h) if entry else (h, x))
                        if i is not None:
                            partners = home[x] - ct.server_home.get((s_rep, x), 0)
                            terms.append((int(relay[i]), m * partners * d0))
                    if terms:
                        b.load(key, row_cap[1 if entry else 0], terms, 1.0)
        adj = leaf_neighbours(cl)
        for i, (a, c) in enumerate(ct.pairs.tolist()):
            for (x, y), classes, shares in relay_hops(cl, leaf_path(adj, a, c)):
                for kx, w in zip(classes, shares, strict=True):
                    capd, capu = _nic_cap(cl, kx, x)[1], _nic_cap(cl, kx, y)[0]
                    per_server = ct.pair_demand[i] * d0 * w / cl.size[kx]
                    b.load(("nic", kx, x, "down"), capd, [(int(relay[i]), per_server)], 1.0)
                    b.load(("nic", kx, y, "up"), capu, [(int(relay[i]), per_server)], 1.0)

    def shortcuts(self) -> None:
        """A spanning server's relayed traffic that leaves (arrives) by its own NIC on the
        relay's first (last) hop's far leaf, over its NVSwitches, rather than crossing that
        hop through the servers that span it: one column per class and pair of one group
        whose relay path starts (ends) on a leaf of the class, at most what the class's
        endpoints there relay. It takes its load off the class's NIC on the near leaf and
        off the hop's spanning servers and puts it on the class's NIC on the far leaf. On a
        one-hop path a piece left out by its sender and taken in by its receiver would be
        taken off the hop twice: there the two shares sum to at most the relay."""
        b, cl, ct, d0 = self.b, self.cl, self.ct, self.d0
        relay, home = self.c["relay"], ct.home
        adj = leaf_neighbours(cl)
        found: dict[tuple[int, int, bool], tuple[int, float]] = {}
        self.c["shortcut"] = found
        spanning: dict[int, list[int]] = defaultdict(list)  # leaf -> spanning classes homed
        for k in range(len(cl.size)):
            if len(cl.leaves[k]) > 1:
                for h in cl.homes[k]:
                    spanning[h].append(k)
        if not spanning:
            return
        for i, (a, c) in enumerate(ct.pairs.tolist()):
            if a not in spanning and c not in spanning:
                continue
            path = leaf_path(adj, a, c)
            one_hop: dict[bool, list[tuple[int, float]]] = {False: [], True: []}
            for entry in (False, True):
                near, far, other = (c, path[-2], a) if entry else (a, path[1], c)
                for k in spanning.get(near, ()):
                    m = cl.homes[k][near]
                    if far not in cl.leaves[k]:
                        continue
                    vol = m * (home[other] - ct.server_home.get((self.reps[k], other), 0)) * d0
                    if vol <= 0:
                        continue
                    u = b.col()
                    found[(k, i, entry)] = (u, vol)
                    b.le([(u, 1.0), (int(relay[i]), -vol)])
                    side = "down" if entry else "up"
                    b.load(("nic", k, near, side), _nic_cap(cl, k, near)[entry], [(u, -1.0)],
                           1.0)
                    b.load(("nic", k, far, side), _nic_cap(cl, k, far)[entry], [(u, 1.0)],
                           1.0)
                    x, y = (far, near) if entry else (near, far)
                    for _, classes, shares in relay_hops(cl, [x, y]):
                        for kx, w in zip(classes, shares, strict=True):
                            per_server = -float(cl.size[k]) * w / float(cl.size[kx])
                            b.load(("nic", kx, x, "down"), _nic_cap(cl, kx, x)[1],
                                   [(u, per_server)], 1.0)
                            b.load(("nic", kx, y, "up"), _nic_cap(cl, kx, y)[0],
                                   [(u, per_server)], 1.0)
                    if len(path) == 2:  # one hop: see one_hop_pairs
                        one_hop[entry].append((u, vol))
            for u_out, v_out in one_hop[False]:
                for u_in, v_in in one_hop[True]:
                    b.le([(u_out, 1.0 / v_out), (u_in, 1.0 / v_in), (int(relay[i]), -1.0)])

    def hubs(self) -> dict[tuple[int, int, int], np.ndarray]:
        """Between zones, each plane's volume over its hubs."""
        b, pl, c = self.b, self.pl, self.c
        hubs: dict[tuple[int, int, int], np.ndarray] = {}
        # The pairs of one group's leaves, by the zones of their ends: read once (looking
        # through every pair for each zone pair and plane took 96 s on a failed
        # 16,384-GPU SuperPOD).
        by_zones: dict[tuple[int, int], list[int]] = defaultdict(list)
        ends = pl.leaf_zone[self.ct.pairs] if len(self.ct.pairs) else np.zeros((0, 2), int)
        for i, (y, z) in enumerate(ends.tolist()):
            by_zones[(y, z)].append(i)
        for z1 in range(pl.n_zones):
            for z2 in range(pl.n_zones):
                if z1 == z2:
                    continue
                weights = _middle_weights(pl, self.ct, z1, z2)
                pairs = by_zones.get((z1, z2), [])
                for p in range(pl.n_planes):
                    terms = _middle_volume(pl, self.ct, c["alpha"], c["beta"], c["gamma"],
                                           c["climb"], z1, z2, p, self.d0, weights, pairs)
                    if not terms:
                        continue
                    ways = [(h, fr[z1], to[z2]) for h, fr, to in pl.hubs[p]
                            if fr[z1] >= 0 and to[z2] >= 0]
                    cols_h = hubs[(z1, z2, p)] = b.cols(len(ways))
                    b.eq([(int(x), 1.0) for x in cols_h] + [(x, -v) for x, v in terms])
                    for x, (_, a1, a2) in zip(cols_h, ways, strict=True):
                        for arc in (a1, a2):
                            b.load(("arc", int(arc)), self.cap[arc], [(int(x), 1.0)], 1.0)
        return hubs


def leaf_kinds(pl: Planes) -> tuple[np.ndarray, int]:
    """Leaves whose shifts (the LP's alpha and beta) are one: every leaf of a group that
    lost a link to a plane is its own kind; the other leaves of a zone are one kind (by
    symmetry they would choose alike were they filled alike). Returns the kind of each leaf
    and how many kinds there are.
    """
    damaged = ((pl.up < 0) | (pl.down < 0)).any(axis=1)
    hit_group = np.zeros(int(pl.leaf_group.max()) + 1, dtype=bool)
    hit_group[pl.leaf_group[damaged]] = True
    own = hit_group[pl.leaf_group]
    key = np.where(own, pl.n_zones + np.arange(pl.n_leaves), pl.leaf_zone)
    _, kind = np.unique(key, return_inverse=True)
    return kind.astype(np.int64), int(kind.max()) + 1


def _class_representatives(cl: Classes) -> list[int]:
    first = np.unique(cl.of_server, return_index=True)[1]
    order = np.argsort(cl.of_server[first])
    return [int(s) for s in first[order]]


def _nic_cap(cl: Classes, k: int, leaf: int) -> tuple[float, float]:
    """A server of class ``k``'s NIC capacity (up, down) on ``leaf`` (0 when none)."""
    i = np.searchsorted(cl.leaves[k], leaf)
    if i < len(cl.leaves[k]) and cl.leaves[k][i] == leaf:
        return float(cl.cap_up[k][i]), float(cl.cap_down[k][i])
    return 0.0, 0.0


def _route_loads(b: _Builder, pl: Planes, cl: Classes, k: int, p: int, rt: Route,
                 entry: bool, terms: list[tuple[int, float]], scale: float,
                 cap: np.ndarray) -> None:
    """Add the loads of route ``rt`` (per server of class ``k``: ``terms``) to the rows."""
    size = float(cl.size[k])
    own = ("nic", k, rt.leaf, "down" if entry else "up")
    b.load(own, _nic_cap(cl, k, rt.leaf)[1 if entry else 0], terms, scale)
    if rt.kind == "direct":
        arc = pl.down[rt.leaf, p] if entry else pl.up[rt.leaf, p]
        b.load(("arc", int(arc)), cap[arc], terms, scale * size)
    elif rt.kind == "relay":
        for (x, y), classes, shares in relay_hops(cl, [rt.leaf, rt.next]):
            for kx, w in zip(classes, shares, strict=True):
                per_server = scale * size * w / float(cl.size[kx])
                down_x, up_y = _nic_cap(cl, kx, x)[1], _nic_cap(cl, kx, y)[0]
                if entry:  # from y down to the server and up to x
                    b.load(("nic", kx, y, "down"), _nic_cap(cl, kx, y)[1], terms, per_server)
                    b.load(("nic", kx, x, "up"), _nic_cap(cl, kx, x)[0], terms, per_server)
                else:
                    b.load(("nic", kx, x, "down"), down_x, terms, per_server)
                    b.load(("nic", kx, y, "up"), up_y, terms, per_server)
        arc = pl.down[rt.next, p] if entry else pl.up[rt.next, p]
        b.load(("arc", int(arc)), cap[arc], terms, scale * size)
    else:
        arcs = bounce_arcs(pl, rt.leaf, p, entry)
        for arc, w in arcs:
            b.load(("arc", int(arc)), cap[arc], terms, scale * size * w)


def _climb_terms(climb, a: int, c: int, p: int, w: float) -> list[tuple[int, float]]:
    """LP terms of ``w`` times the share of plane ``p`` climbed by the pair ``(a, c)``."""
    return [(int(climb[0][a, p]), w), (int(climb[1][c, p]), w)]


def _middle_weights(pl: Planes, ct: Counts, z1: int, z2: int
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, float]:
    """What the volume from zone ``z1`` to zone ``z2`` weighs each share with, whatever the
    plane: ``(leaves of z1, their weights on alpha, leaves of z2, theirs on beta, gamma's
    weight)``, endpoint pairs in two groups."""
    src = np.flatnonzero(pl.leaf_zone == z1)
    dst = np.flatnonzero(pl.leaf_zone == z2)
    w_src = np.array([ct.home[x] * ct.outside_zone(z2, int(pl.leaf_group[x])) for x in src],
                     dtype=float)
    w_dst = np.array([ct.home[x] * ct.outside_zone(z1, int(pl.leaf_group[x])) for x in dst],
                     dtype=float)
    return src[w_src > 0], w_src[w_src > 0], dst[w_dst > 0], w_dst[w_dst > 0], w_src.sum()


def _middle_volume(pl: Planes, ct: Counts, alpha, beta, gamma, climb, z1: int, z2: int,
                   p: int, d0: float, weights: tuple, pairs: list[int] | None = None
                   ) -> list[tuple[int, float]]:
    """The volume from zone ``z1`` to zone ``z2`` on plane ``p``, as LP terms
    (``weights``: :func:`_middle_weights` of the two zones; ``pairs``: the rows of
    ``ct.pairs`` from a leaf of ``z1`` to one of ``z2``, when the caller has them)."""
    terms: list[tuple[int, float]] = []
    key = (z1, z2)
    if key in gamma:
        src, w_src, dst, w_dst, total = weights
        terms += zip(alpha[src, p].tolist(), (w_src * d0).tolist(), strict=True)
        terms += zip(beta[dst, p].tolist(), (w_dst * d0).tolist(), strict=True)
        terms.append((int(gamma[key][p]), total * d0))
    if pairs is None:
        pairs = [i for i, (a, c) in enumerate(ct.pairs.tolist())
                 if pl.leaf_zone[a] == z1 and pl.leaf_zone[c] == z2]
    for i in pairs:
        a, c = int(ct.pairs[i, 0]), int(ct.pairs[i, 1])
        terms.extend(_climb_terms(climb, a, c, p, ct.pair_demand[i] * d0))
    return terms


def _assemble(b: _Builder, lam: int, rate: bool = False) -> LinearProgram:
    """The LP of ``b``'s rows: minimise ``lam`` with every load within ``lam`` times its
    capacity; ``rate``: maximise ``lam`` (the rate every pair is sent at, which ``b``'s own
    rows hold) with every load within its capacity, so that no column meets every load row
    (:mod:`fabricopt.failures.plane_groups_lp`)."""
    n_cols = b.n_cols
    n_load = len(b.ub_rows)
    cap = [b.ub_cap[r] for r in range(n_load)]
    rows = [r for r, _, _ in b.ub_entries] + ([] if rate else list(range(n_load)))
    cols = [c for _, c, _ in b.ub_entries] + ([] if rate else [lam] * n_load)
    vals = [v for _, _, v in b.ub_entries] + ([] if rate else [-c for c in cap])
    loads = sp.csr_matrix((vals, (rows, cols)), shape=(n_load, n_cols))
    const = np.array([b.ub_const.get(r, 0.0) for r in range(n_load)])
    le = sp.csr_matrix(([v for _, _, v in b.le_entries],
                        ([r for r, _, _ in b.le_entries], [c for _, c, _ in b.le_entries])),
                       shape=(b.n_le, n_cols))
    a_ub = sp.vstack([loads, le]).tocsr()
    b_ub = np.concatenate([(np.array(cap) if rate else 0.0) - const, np.zeros(b.n_le)])
    a_eq = sp.csr_matrix(([v for _, _, v in b.eq_entries],
                          ([r for r, _, _ in b.eq_entries], [c for _, c, _ in b.eq_entries])),
                         shape=(len(b.eq_rhs), n_cols))
    c = np.zeros(n_cols)
    c[lam] = -1.0 if rate else 1.0
    lb = np.zeros(n_cols)
    lb[b.free] = -np.inf
    return LinearProgram(c, a_ub, b_ub, a_eq, np.array(b.eq_rhs), lb, np.full(n_cols, np.inf))


def _solution(pl: Planes, ct: Counts, routes: PlaneRoutes, cols: _Columns, x: np.ndarray,
              status: str, message: str, relay_leaves: np.ndarray,
              size: dict[str, int], one_hop: np.ndarray) -> PlaneSolution:
    """The LP's point as shares: clipped at 0 (an interior point's tolerances), each pair's
    shares scaled to sum to one, route and hub shares normalised."""
    npl = pl.n_planes
    alpha = np.clip(x[cols.alpha], 0.0, None)
    beta = np.clip(x[cols.beta], 0.0, None)
    gamma = np.zeros((pl.n_zones, pl.n_zones, npl))
    # Each pair's shares sum to one: every leaf's alpha (beta) to its zone's total, then
    # each zone pair's gamma to what is left.
    a_zone = np.clip(x[cols.a_zone], 0.0, None)
    b_zone = np.clip(x[cols.b_zone], 0.0, None)
    for m, zone_total in ((alpha, a_zone), (beta, b_zone)):
        want = zone_total[pl.leaf_zone]
        have = m.sum(axis=1)
        m *= np.where(have > 0, want / np.where(have > 0, have, 1.0), 0.0)[:, None]
    for (z1, z2), c in cols.gamma.items():
        g = np.clip(x[c], 0.0, None)
        left = max(1.0 - a_zone[z1] - b_zone[z2], 0.0)
        gamma[z1, z2] = g * (left / g.sum()) if g.sum() > 0 else left / npl
    out_in = [np.clip(x[c], 0.0, None) for c in cols.climb]
    a, c = ct.pairs[:, 0], ct.pairs[:, 1]
    climb = out_in[0][a] + out_in[1][c]
    relay = np.clip(x[cols.relay], 0.0, None)
    total = climb.sum(axis=1) + relay
    climb = climb / total[:, None]
    relay = relay / total

    def shares(c: np.ndarray) -> np.ndarray:
        if len(c) == 1 and c[0] < 0:
            return np.ones(1)
        if len(c) == 0:
            return np.zeros(0)
        v = np.clip(x[c], 0.0, None)
        s = v.sum()
        return v / s if s > 0 else np.eye(1, len(c)).ravel()

    exits = tuple(shares(c) for c in cols.exits)
    entries = tuple(shares(c) for c in cols.entries)
    hubs = {key: shares(c) for key, c in cols.hubs.items()}
    return PlaneSolution(status, message, alpha, beta, gamma, climb, relay, exits, entries,
                         hubs, relay_leaves, size,
                         shortcut=_shortcut_shares(cols, x, one_hop))


def one_hop_pairs(cl: Classes, ct: Counts) -> np.ndarray:
    """Per pair of ``ct.pairs``, whether spanning servers join its two leaves directly
    (its relay path is one hop)."""
    return np.array([(a, c) in cl.hops for a, c in ct.pairs.tolist()], dtype=bool)


def _shortcut_shares(cols: _Columns, x: np.ndarray, one_hop: np.ndarray
                     ) -> dict[tuple[int, int, bool], float]:
    """The LP's shortcuts as shares of what each class relays (clipped to [0, 1]); on a
    one-hop pair the largest share out and the largest in are scaled to sum to at most one
    (the LP's rows, up to its tolerance)."""
    raw = np.clip(x[cols.relay], 0.0, None)
    out: dict[tuple[int, int, bool], float] = {}
    for (k, i, entry), (u, vol) in cols.shortcut.items():
        f = float(x[u]) / (vol * raw[i]) if raw[i] > 0 else 0.0
        out[(k, i, entry)] = min(max(f, 0.0), 1.0)
    most: dict[tuple[int, bool], float] = defaultdict(float)
    for (_, i, entry), f in out.items():
        if one_hop[i]:
            most[(i, entry)] = max(most[(i, entry)], f)
    for key, f in out.items():
        i = key[1]
        both = most.get((i, False), 0.0) + most.get((i, True), 0.0)
        if one_hop[i] and both > 1.0:
            out[key] = f / both
    return {key: f for key, f in out.items() if f > 0}


__all__ = ["BuiltPlaneLP", "Counts", "PlaneSolution", "counts", "leaf_kinds", "solve_planes",
           "vertex_solution"]
