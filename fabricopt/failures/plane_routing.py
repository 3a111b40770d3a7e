r"""A routing through the planes of a Clos of servers, and its proof.

:mod:`fabricopt.failures.plane_lp` chooses how all-to-all traffic crosses the planes
(:mod:`fabricopt.failures.planes`); :class:`PlaneProof` keeps those choices and
:func:`proven_plane_rate` turns them back into a flow on the fabric and proves what it
carries, from the fabric alone:

* every pair of endpoints is sent whole: its shares (of each plane, or climbed, relayed,
  turned at a leaf, kept in a server) add up to at least :math:`t` of its demand, none below
  zero;
* every piece of it runs along a path of the fabric: GPU to a NIC's GPU over the server's
  NVSwitches, NIC link, one of the routes of :func:`~fabricopt.failures.plane_routes.plane_routes`
  up to the plane's switch in its zone, over one of the plane's hubs to the target's zone,
  and the same way down (each route's, hub's and NIC's share of what crosses it summing to
  one); a relay between two leaves of a group crosses spanning servers hop by hop, less
  what a spanning sender (receiver) takes over its own NIC on the first hop's far leaf (the
  last hop's near one), so every commodity is conserved at every node;
* the loads those paths put on each arc, summed here in a way of their own (per endpoint and
  per server, not per class as the LP does), are within :math:`\mu` times its capacity.

Then the fabric carries :math:`t / \mu` of the traffic. No per-commodity flow is stored:
on a failed 4,096-GPU Clos it would have 16 million commodities; the shares have a few
thousand entries per plane.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import scipy.sparse as sp

from ..flow.proof import ProofCheck
from ..graph_arrays import GraphArrays
from ..traffic import Traffic
from .plane_lp import PlaneSolution, counts, one_hop_pairs
from .plane_routes import (
    bounce_arcs,
    leaf_neighbours,
    leaf_path,
    plane_routes,
    relay_hops,
    server_classes,
)
from .planes import Planes, plane_structure

#: A share below this is taken for rounding (an interior point's tolerance), not a flow.
NEGATIVE_SHARE_TOL = 1e-12


@dataclass(frozen=True)
class PlaneProof:
    """The shares of a routing through the planes (the names of
    :class:`~fabricopt.failures.plane_lp.PlaneSolution`), enough to rebuild its flow."""

    relay_leaves: np.ndarray
    alpha: np.ndarray
    beta: np.ndarray
    gamma: np.ndarray
    climb: np.ndarray
    relay: np.ndarray
    exits: tuple[np.ndarray, ...]
    entries: tuple[np.ndarray, ...]
    hubs: dict[tuple[int, int, int], np.ndarray]
    #: Pairs of one group on two leaves turned at a leaf of the group (a sparse matrix,
    #: pairs x leaves: each pair's share turned at each leaf, over the sending server's NIC
    #: on it and the receiving server's); None: no turns.
    turn: Any = None
    #: (class, pair, entry) -> the share of what a server of that class relays for that pair
    #: of one group's leaves (out of its leaf: entry False; into it: True) that leaves
    #: (arrives) by its own NIC on the far leaf of the relay's first (last) hop, over its
    #: NVSwitches, instead of crossing that hop; None: none.
    shortcut: Any = None

    #: The stage that routes through the planes (:mod:`fabricopt.failures.plane_bracket`).
    STAGES: ClassVar[tuple[str, ...]] = ("planes",)

    @classmethod
    def of(cls, sol: PlaneSolution) -> PlaneProof:
        return cls(sol.relay_leaves, sol.alpha, sol.beta, sol.gamma, sol.climb, sol.relay,
                   sol.exits, sol.entries, sol.hubs, shortcut=sol.shortcut or None)

    def check(self, fab: Any, traffic: Traffic) -> ProofCheck:
        """The theta the routing proves for ``traffic`` on ``fab``
        (:func:`proven_plane_rate`: 0 for a traffic other than uniform all-to-all over every
        endpoint, or a fabric without these planes)."""
        rate = proven_plane_rate(fab, traffic, self)
        return ProofCheck(rate.theta, rate.overload)


@dataclass(frozen=True)
class PlaneRate:
    """What a :class:`PlaneProof` proves: ``theta`` of the traffic (0 when it proves
    nothing, ``why`` saying so), the smallest share of a pair ``sent`` and the busiest arc's
    load over its capacity ``overload``, with the flow's Gb/s per arc ``load`` (at theta
    one)."""

    theta: float
    sent: float
    overload: float
    load: np.ndarray | None
    why: str = ""


def proven_plane_rate(fab, traffic: Traffic, proof: PlaneProof,
                      ga: GraphArrays | None = None, planes: Planes | None = None
                      ) -> PlaneRate:
    """Re-prove ``proof`` on ``fab`` for ``traffic`` (see the module docstring).

    Only uniform all-to-all traffic over the fabric's endpoints is routed this way; any
    other proves nothing (theta 0). ``planes``: the fabric's planes read already, by a caller
    that just read them from ``fab`` (:func:`~fabricopt.check_certificate` reads them
    again).
    """
    ga = GraphArrays.from_fabric(fab) if ga is None else ga
    if not traffic.is_uniform or traffic.uniform_gbps is None or traffic.uniform_gbps <= 0:
        return PlaneRate(0.0, 0.0, 0.0, None, "the traffic is not uniform all-to-all")
    pl, why = (planes, "") if planes is not None else plane_structure(fab, ga)
    if pl is None:
        return PlaneRate(0.0, 0.0, 0.0, None, why)
    if set(traffic.endpoints) != set(fab.endpoints):
        return PlaneRate(0.0, 0.0, 0.0, None, "the traffic is not over every endpoint")
    try:
        unit = _PlaneFlow(pl, proof).load()
    except _NoProof as exc:
        return PlaneRate(0.0, 0.0, 0.0, None, str(exc))
    load, sent = unit
    gbps = float(traffic.uniform_gbps)
    load = load * gbps
    used = load > 0
    if (ga.capacity[used] <= 0).any():
        return PlaneRate(0.0, sent, np.inf, load, "a flow crosses an arc of no capacity")
    overload = float((load[used] / ga.capacity[used]).max()) if used.any() else 0.0
    theta = sent / overload if overload > 0 else 0.0
    return PlaneRate(theta, sent, overload, load)


class _NoProof(Exception):
    """The shares do not describe a flow of this fabric."""


class _PlaneFlow:
    """The flow of a :class:`PlaneProof` on the planes ``pl``, summed per arc."""

    def __init__(self, pl: Planes, proof: PlaneProof) -> None:
        self.pl, self.proof = pl, proof
        self.cl = server_classes(pl)
        self.ct = counts(pl)
        self.routes = plane_routes(pl, self.cl, np.asarray(proof.relay_leaves, dtype=bool))
        self.arc = np.zeros(pl.ga.n_arcs)
        n = len(pl.endpoints)
        # What each endpoint sends up (receives down) through each leaf, and what each
        # server carries across from one of its leaves to another (relays).
        self.up: dict[tuple[int, int], float] = defaultdict(float)
        self.down: dict[tuple[int, int], float] = defaultdict(float)
        self.transit: dict[tuple[int, int, int], float] = defaultdict(float)
        # Per direction (up, down): what routes sent, (endpoints, leaf, volumes) each.
        self._pending: dict[bool, list[tuple[np.ndarray, int, np.ndarray]]] = {False: [],
                                                                                True: []}
        self.n = n

    # -- checks -------------------------------------------------------------------------
    def _shapes(self) -> None:
        pl, pr, ct = self.pl, self.proof, self.ct
        want = {"alpha": (pl.n_leaves, pl.n_planes), "beta": (pl.n_leaves, pl.n_planes),
                "gamma": (pl.n_zones, pl.n_zones, pl.n_planes),
                "climb": (len(ct.pairs), pl.n_planes), "relay": (len(ct.pairs),),
                "relay_leaves": (pl.n_leaves,)}
        for name, shape in want.items():
            if np.shape(getattr(pr, name)) != shape:
                raise _NoProof(f"{name} has shape {np.shape(getattr(pr, name))}, the fabric's "
                               f"planes want {shape}")
        for name in ("exits", "entries"):
            got = getattr(pr, name)
            if len(got) != len(self.routes.keys) or any(
                    len(s) != len(r) for s, r in zip(got, self.routes.routes, strict=True)):
                raise _NoProof(f"{name} do not match the routes of the fabric's planes")
        for name in ("alpha", "beta", "gamma", "climb", "relay"):
            v = np.asarray(getattr(pr, name), dtype=float)
            if not np.isfinite(v).all() or (v < -NEGATIVE_SHARE_TOL).any():
                raise _NoProof(f"{name} has a negative or non-finite share")
        if pr.turn is not None:
            if not sp.issparse(pr.turn) or pr.turn.shape != (len(ct.pairs), pl.n_leaves):
                raise _NoProof(f"turn is not a sparse matrix of shape "
                               f"{(len(ct.pairs), pl.n_leaves)}")
            data = np.asarray(pr.turn.data, dtype=float)
            if not np.isfinite(data).all() or (data < -NEGATIVE_SHARE_TOL).any():
                raise _NoProof("turn has a negative or non-finite share")
        if pr.shortcut is not None:
            self._shortcut_shapes()

    def _shortcut_shapes(self) -> None:
        """Each shortcut names a class homed on its pair's near leaf with a NIC on the
        far one, a share in [0, 1]; on a one-hop pair the largest out and in sum to at most
        one (else a piece would be taken off the hop twice)."""
        cl, ct, pr = self.cl, self.ct, self.proof
        if not isinstance(pr.shortcut, dict):
            raise _NoProof("shortcut is not a dict of (class, pair, entry) -> share")
        one_hop = one_hop_pairs(cl, ct)
        adj = leaf_neighbours(cl)
        most: dict[tuple[int, bool], float] = defaultdict(float)
        for key, f in pr.shortcut.items():
            if (not isinstance(key, tuple) or len(key) != 3
                    or not 0 <= key[0] < len(cl.size) or not 0 <= key[1] < len(ct.pairs)):
                raise _NoProof(f"shortcut {key!r} names no class and pair of the fabric")
            k, i, entry = int(key[0]), int(key[1]), bool(key[2])
            if not np.isfinite(f) or not -NEGATIVE_SHARE_TOL <= f <= 1 + NEGATIVE_SHARE_TOL:
                raise _NoProof(f"shortcut {key!r} has a share outside [0, 1]")
            a, c = ct.pairs[i].tolist()
            path = leaf_path(adj, a, c)
            near, far = (c, path[-2]) if entry else (a, path[1])
            if near not in cl.homes[k] or far not in cl.leaves[k].tolist():
                raise _NoProof(f"shortcut {key!r}: the class has no endpoint on leaf {near} "
                               f"or no NIC on leaf {far}")
            if one_hop[i]:
                most[(i, entry)] = max(most[(i, entry)], float(f))
        for (i, entry), f in most.items():
            if not entry and f + most.get((i, True), 0.0) > 1 + 1e-9:
                raise _NoProof(f"pair {i}: its shortcuts out and in sum to more than one")

    def sent(self) -> float:
        """The smallest share any pair of endpoints is sent with."""
        pl, pr, ct = self.pl, self.proof, self.ct
        home = ct.home
        has = home > 0
        a_tot = np.clip(pr.alpha, 0, None).sum(axis=1)[has]
        b_tot = np.clip(pr.beta, 0, None).sum(axis=1)[has]
        g_tot = np.clip(pr.gamma, 0, None).sum(axis=2)
        zone, group = pl.leaf_zone[has], pl.leaf_group[has]
        total = a_tot[:, None] + b_tot[None, :] + g_tot[zone][:, zone]
        apart = group[:, None] != group[None, :]
        low = float(total[apart].min()) if apart.any() else np.inf
        if len(ct.pairs):
            inside = np.clip(pr.climb, 0, None).sum(axis=1) + np.clip(pr.relay, 0, None)
            if pr.turn is not None:
                inside = inside + np.asarray(_turn_matrix(pr.turn).sum(axis=1)).ravel()
            low = min(low, float(inside.min()))
        # Pairs on one leaf turn there and pairs in one server stay in it: whole.
        return min(low, 1.0) if np.isfinite(low) else 1.0

    # -- the flow -----------------------------------------------------------------------
    def load(self) -> tuple[np.ndarray, float]:
        """Per arc, the load of the flow at one unit per pair; and its smallest share."""
        self._shapes()
        sent = self.sent()
        out_v, in_v, middle = self._volumes()
        self._routes(out_v, in_v)
        self._middle(middle)
        self._inside_groups()
        self._servers()
        return self.arc, sent

    def _volumes(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per endpoint and plane, what it sends up and receives down through the planes;
        per zone pair and plane, what crosses the hubs."""
        pl, pr, ct = self.pl, self.proof, self.ct
        nz, zone = pl.n_zones, pl.leaf_zone
        alpha, beta = np.clip(pr.alpha, 0, None), np.clip(pr.beta, 0, None)
        gamma = np.clip(pr.gamma, 0, None)
        home = ct.home.astype(float)
        per_leaf_out, per_leaf_in, middle = _apart_volumes(pl, home, alpha, beta, gamma)
        idx = np.arange(nz)
        middle[idx, idx, :] = 0.0  # within a zone the plane's switch turns it
        out_v = per_leaf_out[pl.home].copy()
        in_v = per_leaf_in[pl.home].copy()
        # Pairs in one group on two leaves that climb.
        climb = np.clip(pr.climb, 0, None)
        on_leaf = self._server_home_counts()
        homed = self._homed()
        for i, (a, c) in enumerate(ct.pairs.tolist()):
            for e in homed[a]:
                partners = home[c] - on_leaf.get((int(pl.server[e]), c), 0)
                out_v[e] += partners * climb[i]
            for f in homed[c]:
                partners = home[a] - on_leaf.get((int(pl.server[f]), a), 0)
                in_v[f] += partners * climb[i]
            if zone[a] != zone[c]:
                middle[zone[a], zone[c]] += ct.pair_demand[i] * climb[i]
        return out_v, in_v, middle

    def _homed(self) -> list[list[int]]:
        """The endpoints homed on each leaf, in order."""
        order = np.argsort(self.pl.home, kind="stable")
        cuts = np.searchsorted(self.pl.home[order], np.arange(self.pl.n_leaves + 1))
        return [order[cuts[x]:cuts[x + 1]].tolist() for x in range(self.pl.n_leaves)]

    def _server_home_counts(self) -> dict[tuple[int, int], int]:
        out: dict[tuple[int, int], int] = defaultdict(int)
        for s, h in zip(self.pl.server.tolist(), self.pl.home.tolist(), strict=True):
            out[(s, h)] += 1
        return out

    def _routes(self, out_v: np.ndarray, in_v: np.ndarray) -> None:
        """Each server's volume on each plane along its routes to the plane's switch."""
        pl, cl, pr = self.pl, self.cl, self.proof
        zone_of_ep = pl.leaf_zone[pl.home]
        class_of_ep = cl.of_server[pl.server]
        members: dict[tuple[int, int], np.ndarray] = {}
        order = np.lexsort((zone_of_ep, class_of_ep))
        keys = class_of_ep[order] * pl.n_zones + zone_of_ep[order]
        cuts = np.flatnonzero(np.diff(keys)) + 1
        for chunk in np.split(order, cuts):
            if len(chunk):
                e = int(chunk[0])
                members[(int(class_of_ep[e]), int(zone_of_ep[e]))] = chunk
        covered = set()
        for (k, z, p), rts, x_out, x_in in zip(self.routes.keys, self.routes.routes,
                                               pr.exits, pr.entries, strict=True):
            covered.add((k, z, p))
            eps = members.get((k, z))
            if eps is None:
                continue
            for vol, shares, entry in ((out_v[eps, p], x_out, False),
                                       (in_v[eps, p], x_in, True)):
                total = float(vol.sum())
                if total <= 0:
                    continue
                shares = np.clip(np.asarray(shares, dtype=float), 0, None)
                if not len(rts) or shares.sum() <= 0:
                    raise _NoProof(f"a server sends on plane {p} with no route to it")
                shares = shares / shares.sum()
                for rt, x in zip(rts, shares.tolist(), strict=True):
                    if x > 0:
                        self._route(rt, p, eps, vol * x, entry)
        # A volume on a plane no route reaches (its zone has no switch of the plane).
        for (k, z), eps in members.items():
            for p in range(pl.n_planes):
                if (k, z, p) not in covered and (out_v[eps, p].sum() > 0
                                                 or in_v[eps, p].sum() > 0):
                    raise _NoProof(f"plane {p} carries traffic of zone {z}, which it does "
                                   "not reach")
        self._settle()

    def _settle(self) -> None:
        """What the routes sent through each endpoint's leaves, summed per (endpoint,
        leaf) at once (one dictionary update per endpoint and route took 12 s on a failed
        16,384-GPU SuperPOD)."""
        nl = self.pl.n_leaves
        for entry, side in ((False, self.up), (True, self.down)):
            pending = self._pending[entry]
            if not pending:
                continue
            keys = np.concatenate([eps.astype(np.int64) * nl + leaf for eps, leaf, _ in pending])
            vols = np.concatenate([vol for _, _, vol in pending])
            unique, inverse = np.unique(keys, return_inverse=True)
            sums = np.bincount(inverse, weights=vols, minlength=len(unique))
            for key, v in zip(unique.tolist(), sums.tolist(), strict=True):
                side[(key // nl, key % nl)] += v
            pending.clear()

    def _route(self, rt, p: int, eps: np.ndarray, vol: np.ndarray, entry: bool) -> None:
        """``vol`` (per endpoint ``eps``) along route ``rt`` of plane ``p``."""
        pl = self.pl
        self._pending[entry].append((eps, rt.leaf, vol))
        total = float(vol.sum())
        if rt.kind == "direct":
            self.arc[pl.down[rt.leaf, p] if entry else pl.up[rt.leaf, p]] += total
        elif rt.kind == "relay":
            self._relay([rt.next, rt.leaf] if entry else [rt.leaf, rt.next], total)
            self.arc[pl.down[rt.next, p] if entry else pl.up[rt.next, p]] += total
        else:
            for a, w in bounce_arcs(pl, rt.leaf, p, entry):
                self.arc[a] += total * w

    def _relay(self, path: list[int], total: float, less_first: float = 0.0,
               less_last: float = 0.0) -> None:
        """``total`` from leaf ``path[0]`` to ``path[-1]`` across spanning servers: down to
        each server of a hop's classes (their shares of it, evenly over their servers),
        across it, up to the next leaf; less ``less_first`` on the first hop and
        ``less_last`` on the last (what their senders' and receivers' own NICs carry)."""
        cl = self.cl
        hops = relay_hops(cl, path)
        for j, ((x, y), classes, shares) in enumerate(hops):
            here = total - (less_first if j == 0 else 0.0) - (
                less_last if j == len(hops) - 1 else 0.0)
            if here < -1e-9 * max(total, 1.0):
                raise _NoProof(f"the shortcuts take more off the hop from leaf {x} to {y} "
                               "than it carries")
            here = max(here, 0.0)
            if abs(float(np.sum(shares)) - 1.0) > 1e-9:
                raise _NoProof(f"a relay from leaf {x} to leaf {y} is not split whole")
            for k, w in zip(classes, shares.tolist(), strict=True):
                if x not in cl.leaves[k] or y not in cl.leaves[k]:
                    raise _NoProof(f"a relay crosses a server not on leaves {x} and {y}")
                servers = np.flatnonzero(cl.of_server == k)
                for s in servers.tolist():
                    self.transit[(s, x, y)] += here * w / len(servers)

    def _middle(self, middle: np.ndarray) -> None:
        """Between zones, each plane's share over its hubs."""
        pl, pr = self.pl, self.proof
        for z1, z2, p in zip(*np.nonzero(middle > 0), strict=True):
            z1, z2, p = int(z1), int(z2), int(p)
            ways = [(fr[z1], to[z2]) for _, fr, to in pl.hubs[p] if fr[z1] >= 0 and to[z2] >= 0]
            shares = pr.hubs.get((z1, z2, p))
            if shares is None or len(shares) != len(ways):
                raise _NoProof(f"zones {z1} and {z2} meet on plane {p} with no hub shares")
            shares = np.clip(np.asarray(shares, dtype=float), 0, None)
            if shares.sum() <= 0:
                raise _NoProof(f"zones {z1} and {z2} meet on plane {p} over no hub")
            shares = shares / shares.sum()
            for (a1, a2), y in zip(ways, shares.tolist(), strict=True):
                self.arc[a1] += middle[z1, z2, p] * y
                self.arc[a2] += middle[z1, z2, p] * y

    def _inside_groups(self) -> None:
        """Pairs on one leaf turn at it; pairs of one group on two leaves that are relayed
        cross the spanning servers between them."""
        pl, pr, ct = self.pl, self.proof, self.ct
        on_leaf = self._server_home_counts()
        home = ct.home
        for e in range(self.n):
            h, s = int(pl.home[e]), int(pl.server[e])
            others = home[h] - on_leaf[(s, h)]
            if others:
                self.up[(e, h)] += others
                self.down[(e, h)] += others
        relay = np.clip(pr.relay, 0, None)
        adj = leaf_neighbours(self.cl)
        homed = self._homed()
        cut = pr.shortcut or {}
        of_class = self.cl.of_server[pl.server]
        for i, (a, c) in enumerate(ct.pairs.tolist()):
            if relay[i] <= 0:
                continue
            path = leaf_path(adj, a, c)
            if path[0] != a or path[-1] != c:
                raise _NoProof(f"leaves {a} and {c} share a group but no spanning servers")
            # What leaves by a server's own NIC on the first hop's far leaf (arrives by the
            # last hop's near one) crosses no spanning server on that hop.
            moved = {False: 0.0, True: 0.0}
            for entry, eps, near, far, other, side in (
                    (False, homed[a], a, path[1], c, self.up),
                    (True, homed[c], c, path[-2], a, self.down)):
                for e in eps:
                    v = relay[i] * (home[other] - on_leaf.get((int(pl.server[e]), other), 0))
                    f = float(cut.get((int(of_class[e]), i, entry), 0.0)) if cut else 0.0
                    side[(e, near)] += v * (1.0 - f)
                    if f > 0:
                        side[(e, far)] += v * f
                        moved[entry] += v * f
            self._relay(path, ct.pair_demand[i] * relay[i], moved[False], moved[True])
        if pr.turn is not None:
            self._turns(_turn_matrix(pr.turn), homed, on_leaf)

    def _turns(self, turn: sp.csr_matrix, homed: list[list[int]],
               on_leaf: dict[tuple[int, int], int]) -> None:
        """Pair ``i`` of one group on leaves ``(a, c)`` turned at leaf ``x`` with share
        ``turn[i, x]``: each endpoint on ``a`` sends that share of what it sends to the
        endpoints on ``c`` (in other servers) up its server's NIC on ``x``, and each on
        ``c`` receives it down its server's NIC on ``x`` (:meth:`_servers` carries both
        across the NVSwitches and finds no NIC there a broken proof). Summed with arrays
        (a loop per endpoint took 6 s on a failed 16,384-GPU SuperPOD)."""
        pl, home, nl = self.pl, self.ct.home, self.pl.n_leaves
        server = pl.server.astype(np.int64)
        # Endpoints of each server on each leaf, looked up by key server * leaves + leaf.
        keys = np.array(sorted(s * nl + h for s, h in on_leaf), dtype=np.int64)
        held = np.array([on_leaf[(int(k) // nl, int(k) % nl)] for k in keys], dtype=float)

        def partners(eps: np.ndarray, leaf: int) -> np.ndarray:
            """The endpoints on ``leaf`` outside each of ``eps``'s servers."""
            key = server[eps] * nl + leaf
            at = np.minimum(np.searchsorted(keys, key), len(keys) - 1)
            return home[leaf] - np.where(keys[at] == key, held[at], 0.0)

        homed_arr = [np.asarray(h, dtype=np.int64) for h in homed]
        parts: dict[bool, list[tuple[np.ndarray, np.ndarray]]] = {False: [], True: []}
        for i, (a, c) in enumerate(self.ct.pairs.tolist()):
            lo, hi = turn.indptr[i], turn.indptr[i + 1]
            leaves, shares = turn.indices[lo:hi], turn.data[lo:hi]
            keep = shares > 0
            if not keep.any():
                continue
            leaves, shares = leaves[keep].astype(np.int64), shares[keep]
            for entry, eps, other in ((False, homed_arr[a], c), (True, homed_arr[c], a)):
                volume = partners(eps, other)
                parts[entry].append((np.add.outer(eps * nl, leaves).ravel(),
                                     np.multiply.outer(volume, shares).ravel()))
        for entry, side in ((False, self.up), (True, self.down)):
            if not parts[entry]:
                continue
            key = np.concatenate([k for k, _ in parts[entry]])
            vol = np.concatenate([v for _, v in parts[entry]])
            unique, inverse = np.unique(key, return_inverse=True)
            sums = np.bincount(inverse, weights=vol, minlength=len(unique))
            for k, v in zip(unique.tolist(), sums.tolist(), strict=True):
                if v:
                    side[(k // nl, k % nl)] += v

    def _servers(self) -> None:
        """Inside each server: what goes up and down its NICs (spread over a leaf's NICs by
        capacity) and what crosses its NVSwitches (from a GPU to the NIC's GPU, between two
        GPUs of the server, between two NICs of a relay)."""
        pl, ga = self.pl, self.pl.ga
        cap = ga.capacity
        by_server: dict[int, list[int]] = defaultdict(list)
        for e, s in enumerate(pl.server.tolist()):
            by_server[s].append(e)
        ups: dict[int, list[tuple[int, int, float]]] = defaultdict(list)
        for (e, leaf), v in self.up.items():
            ups[int(pl.server[e])].append((e, leaf, v))
        downs: dict[int, list[tuple[int, int, float]]] = defaultdict(list)
        for (e, leaf), v in self.down.items():
            downs[int(pl.server[e])].append((e, leaf, v))
        transits: dict[int, list[tuple[int, int, float]]] = defaultdict(list)
        for (s, x, y), v in self.transit.items():
            transits[s].append((x, y, v))
        arc_of = {(int(t), int(h)): a
                  for a, (t, h) in enumerate(zip(ga.tail, ga.head, strict=True))}
        for s, eps in by_server.items():
            local = {e: i for i, e in enumerate(eps)}
            m = len(eps)
            # NICs of the server per leaf: (local GPU, arc up, arc down).
            nics: dict[int, list[tuple[int, int, int]]] = defaultdict(list)
            for e in eps:
                arcs, leaves, backs = pl.nics(e)
                for a, leaf, b in zip(arcs.tolist(), leaves.tolist(), backs.tolist(), strict=True):
                    nics[leaf].append((local[e], a, b))
            through = np.ones((m, m)) - np.eye(m)  # GPU to GPU, one unit per pair inside
            up_at: dict[int, float] = defaultdict(float)
            down_at: dict[int, float] = defaultdict(float)

            spread_of: dict[tuple[int, bool], tuple[list[tuple[int, int]], list[float]]] = {}

            def spread(leaf: int, upward: bool, nics=nics, spread_of=spread_of
                       ) -> tuple[list[tuple[int, int]], list[float]]:
                """A leaf's NICs of the server (GPU, arc) and each one's share (read once
                per server and leaf: 524,288 readings on a failed 16,384-GPU SuperPOD)."""
                known = spread_of.get((leaf, upward))
                if known is not None:
                    return known
                links = nics.get(leaf, [])
                w = np.array([cap[a if upward else b] for _, a, b in links], dtype=float)
                if not len(links) or w.sum() <= 0:
                    raise _NoProof(f"a server sends through leaf {leaf} with no NIC on it")
                known = spread_of[(leaf, upward)] = (
                    [(g, a if upward else b) for g, a, b in links], (w / w.sum()).tolist())
                return known

            for e, leaf, v in ups.get(s, ()):
                up_at[leaf] += v
                links, w = spread(leaf, True)
                for (g, _), share in zip(links, w, strict=True):
                    if g != local[e]:
                        through[local[e], g] += v * share
            for f, leaf, v in downs.get(s, ()):
                down_at[leaf] += v
                links, w = spread(leaf, False)
                for (g, _), share in zip(links, w, strict=True):
                    if g != local[f]:
                        through[g, local[f]] += v * share
            for x, y, v in transits.get(s, ()):
                down_at[x] += v
                up_at[y] += v
                ins, w_in = spread(x, False)
                outs, w_out = spread(y, True)
                for (g1, _), s1 in zip(ins, w_in, strict=True):
                    for (g2, _), s2 in zip(outs, w_out, strict=True):
                        if g1 != g2:
                            through[g1, g2] += v * s1 * s2
            for leaf, v in up_at.items():
                links, w = spread(leaf, True)
                for (_, a), share in zip(links, w, strict=True):
                    self.arc[a] += v * share
            for leaf, v in down_at.items():
                links, w = spread(leaf, False)
                for (_, b), share in zip(links, w, strict=True):
                    self.arc[b] += v * share
            self._nvswitches(eps, pl.server_switches[s], through, arc_of)

    def _nvswitches(self, eps: list[int], switches: np.ndarray, through: np.ndarray,
                    arc_of: dict[tuple[int, int], int]) -> None:
        """``through[i, j]`` from GPU ``eps[i]`` to GPU ``eps[j]`` over the switches, split
        in proportion to the GPU's links to each (among those that reach the other GPU); by
        way of a third GPU where no switch reaches both."""
        ga = self.pl.ga
        nodes = self.pl.endpoints[eps]
        sw = [int(x) for x in switches]
        to_sw = np.array([[arc_of.get((int(u), x), -1) for x in sw] for u in nodes])
        from_sw = np.array([[arc_of.get((x, int(u)), -1) for x in sw] for u in nodes])
        cap_to = np.where(to_sw >= 0, ga.capacity[to_sw], 0.0)
        # ok[i, j, k]: GPU i reaches switch k, which reaches GPU j.
        ok = ((to_sw >= 0) & (cap_to > 0))[:, None, :] & (from_sw >= 0)[None, :, :]
        # Two GPUs that share no switch (failed NVLink) go through a GPU that shares one with
        # each, evenly over such GPUs.
        joined = ok.any(axis=2)
        np.fill_diagonal(joined, False)
        through = through.copy()
        for i, j in np.argwhere((through > 0) & ~joined):
            via = np.flatnonzero(joined[i] & joined[:, j])
            if not len(via):
                raise _NoProof(f"GPUs {ga.nodes[nodes[i]]!r} and {ga.nodes[nodes[j]]!r} are "
                               "joined by no NVSwitch or GPU between")
            v, through[i, j] = through[i, j], 0.0
            through[i, via] += v / len(via)
            through[via, j] += v / len(via)
        w = np.where(ok, cap_to[:, None, :], 0.0)
        w /= np.where(w.sum(axis=2, keepdims=True) > 0, w.sum(axis=2, keepdims=True), 1.0)
        flow = through[:, :, None] * w  # (from GPU, to GPU, switch)
        into, out_of = flow.sum(axis=1), flow.sum(axis=0)
        np.add.at(self.arc, to_sw[into > 0], into[into > 0])
        np.add.at(self.arc, from_sw[out_of > 0], out_of[out_of > 0])


def _apart_volumes(pl: Planes, home: np.ndarray, alpha: np.ndarray, beta: np.ndarray,
                   gamma: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For pairs of leaves in two groups, each sending ``home`` endpoints' worth with
    share ``alpha[a, p] + beta[b, p] + gamma[zone a, zone b, p]``: what each leaf sends
    (receives) on each plane, and what each zone sends each other zone (its diagonal
    left as it is). Summed as the sums over all leaves less those over the leaf's own group,
    by group and zone, rather than over every pair of leaves (a leaves-by-leaves matrix per
    plane took 7 s on a failed 32,768-GPU SuperPOD)."""
    nz, ng = pl.n_zones, int(pl.leaf_group.max()) + 1
    group, zone = pl.leaf_group, pl.leaf_zone
    gz = np.zeros((ng, nz))  # endpoints homed in each group and zone
    np.add.at(gz, (group, zone), home)
    zw, gw = gz.sum(axis=0), gz.sum(axis=1)
    wa, wb = alpha * home[:, None], beta * home[:, None]
    gza = np.zeros((ng, nz, alpha.shape[1]))
    gzb = np.zeros_like(gza)
    np.add.at(gza, (group, zone), wa)
    np.add.at(gzb, (group, zone), wb)
    outside = zw[None, :] - gz  # per group, the endpoints of each zone outside it
    out = (alpha * (home.sum() - gw[group])[:, None]
           + wb.sum(axis=0)[None, :] - gzb.sum(axis=1)[group]
           + np.einsum("zyp,gy->gzp", gamma, outside)[group, zone])
    into = (beta * (home.sum() - gw[group])[:, None]
            + wa.sum(axis=0)[None, :] - gza.sum(axis=1)[group]
            + np.einsum("yzp,gy->gzp", gamma, outside)[group, zone])
    za, zb = gza.sum(axis=0), gzb.sum(axis=0)
    every = (za[:, None, :] * zw[None, :, None] + zw[:, None, None] * zb[None, :, :]
             + gamma * (zw[:, None] * zw[None, :])[:, :, None])
    same = (np.einsum("gyp,gz->yzp", gza, gz) + np.einsum("gy,gzp->yzp", gz, gzb)
            + gamma * np.einsum("gy,gz->yz", gz, gz)[:, :, None])
    return out, into, every - same


def _turn_matrix(turn: Any) -> sp.csr_matrix:
    """``turn`` as a CSR matrix with its entries clipped at 0 (rounding)."""
    m = sp.csr_matrix(turn, dtype=float, copy=True)
    m.data = np.clip(m.data, 0.0, None)
    m.sort_indices()
    return m


__all__ = ["PlaneProof", "PlaneRate", "proven_plane_rate"]
