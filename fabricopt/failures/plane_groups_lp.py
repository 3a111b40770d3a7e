r"""A small LP through the planes for a Clos of servers whose groups are whole units.

In a DGX SuperPOD every server of a scalable unit has one NIC on each of the unit's rail
leaves, so a *group* (:mod:`fabricopt.failures.planes`) is one class of servers spanning all of
its leaves. There the planes' LP (:mod:`fabricopt.failures.plane_lp`) can be much smaller and
also better:

* the share of plane :math:`p` for a pair of GPUs in groups :math:`g \ne h` is
  :math:`\alpha_{gp} + \beta_{hp} + \gamma_p` (one shift per group, not per leaf: every
  server of the group reaches every one of its leaves over its own NVSwitches, so only the
  group's total on a plane matters), :math:`\sum_p \alpha_{gp} = A`,
  :math:`\sum_p \beta_{hp} = B`, :math:`A + B + \sum_p \gamma_p = 1`, all at least 0;
* a server's volume on a plane leaves it by any of its NICs whose leaf has that plane's
  uplink (PXN: the GPU hands it to the rail's GPU over the NVSwitches), in shares the LP
  picks per group and plane;
* a pair of one group on two leaves *turns* at a leaf of the group the LP picks (shares
  per group and leaf), over the sending server's NIC on it and the receiving server's:
  a leaf that lost uplinks carries more of its unit's own traffic and less of the planes'
  — the exchange inside each server the optimum of a failed SuperPOD makes;
* between zones each plane's volume is spread evenly over its hubs.

The LP maximises the rate :math:`t` every pair is sent at (the shares sum to :math:`t`)
with every NIC, uplink and hub link within its capacity: written so, no column meets every
load row (a busiest-load column in every row made HiGHS's interior point take 80 s on a
16,384-GPU SuperPOD; without it a few seconds), and each zone's volume on a plane is one
column its hub links read. About 170,000 nonzeros for 16,384 GPUs, where the general
planes' LP has 2.8 million. Its point is written as a
:class:`~fabricopt.failures.plane_routing.PlaneProof` (turns included), whose check rebuilds the
flow from the fabric and proves it; nothing of the LP is trusted.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from ..flow.backends import highspy_available, solve_lp
from ..flow.budget import now
from .plane_lp import IPM_TOLERANCE, _assemble, _nic_cap, _PlaneLP, _route_loads, counts
from .plane_routes import plane_routes, server_classes
from .plane_routing import PlaneProof
from .planes import Planes

#: CPU seconds HiGHS's interior point takes per nonzero of this LP (1.9 s for the 144,000
#: of a failed 16,384-GPU SuperPOD, 2 cores under load); decides only whether the LP is
#: begun in the time a limit leaves, never a number.
GROUP_IPM_SECONDS_PER_NONZERO = 2e-5


@dataclass(frozen=True)
class GroupPlanes:
    """The LP's routing as a proof (None when the LP was not solved), why it was not
    (``why``), the LP's size and what its optimum promised per endpoint (Gb/s out)."""

    proof: PlaneProof | None
    why: str
    lp_size: dict[str, int]
    lp_gbps: float = 0.0


def whole_groups(pl: Planes) -> str:
    """Why ``pl`` is not a Clos of whole groups ("" when it is): every group one class of
    servers with a NIC on each of the group's leaves, every zone with a switch of every
    plane, and every hub of a plane joined to every zone.

    >>> import fabricopt as fo
    >>> from fabricopt.failures.planes import plane_structure
    >>> whole_groups(plane_structure(fo.superpod(16))[0])
    ''
    """
    cl = server_classes(pl)
    group_of_class = np.array([pl.leaf_group[leaves[0]] for leaves in cl.leaves])
    if len(np.unique(group_of_class)) != len(cl.leaves):
        return "a group has servers of two kinds"
    for k, leaves in enumerate(cl.leaves):
        mine = np.flatnonzero(pl.leaf_group == group_of_class[k])
        if not np.array_equal(np.sort(leaves), mine):
            return "a server has no NIC on some leaf of its group"
    if (pl.port < 0).any():
        return "a zone has no switch of some plane"
    for rows in pl.hubs:
        for _, fr, to in rows:
            if (fr < 0).any() or (to < 0).any():
                return "a hub is not joined to every zone"
    return ""


def solve_group_planes(pl: Planes, time_limit: float | None = None, reserve: float = 0.0,
                       pace: float = 1.0) -> GroupPlanes:
    """The LP of the module docstring, solved, its point as a
    :class:`~fabricopt.failures.plane_routing.PlaneProof`. ``time_limit`` (seconds, None: none)
    is for the build and the solve, less ``reserve`` seconds (the caller's, after it: the
    proof); the LP is not begun when what is left is less than it is expected to take
    (:data:`GROUP_IPM_SECONDS_PER_NONZERO` times ``pace``, the wall seconds a CPU second
    takes on the machine now), and is stopped at what is left.

    Examples
    --------
    A failed SuperPOD of 4 units (1,024 GPUs): the LP's rate meets the cut around the unit
    that lost the most uplinks, 402.756 Gb/s per GPU (the exact LP of the failed fabric by
    its endpoint orbits says the same).

    >>> import fabricopt as fo
    >>> from fabricopt.failures.planes import plane_structure
    >>> fab = fo.fail_random(fo.superpod(4), 0.01, seed=1, tiers=["leaf-spine"])
    >>> found = solve_group_planes(plane_structure(fab)[0])
    >>> found.why, round(found.lp_gbps, 2)
    ('', 402.76)
    """
    start = now()
    why = whole_groups(pl)
    if why:
        return GroupPlanes(None, why, {})
    lp = _GroupLP(pl)
    program = _assemble(lp.b, lp.rate, rate=True)
    size = {"rows": program.n_rows, "columns": program.n_cols, "nonzeros": program.nnz}
    if time_limit is not None:
        time_limit -= (now() - start) + reserve
        need = program.nnz * GROUP_IPM_SECONDS_PER_NONZERO * pace
        if time_limit <= 0 or need > time_limit:
            return GroupPlanes(None, f"its LP ({program.nnz:,} nonzeros, about {need:.0f} s) "
                               "was not begun: too little time left", size)
    sol = (solve_lp(program, "highspy", time_limit, solver="ipm", run_crossover="off",
                    ipm_optimality_tolerance=IPM_TOLERANCE)
           if highspy_available() else solve_lp(program, "highs", time_limit))
    if sol.x is None or not np.isfinite(sol.x).all() or sol.x[lp.rate] <= 0:
        return GroupPlanes(None, f"its LP stopped without a point ({sol.status})", size)
    return GroupPlanes(lp.proof(sol.x), "", size, lp.unit * float(sol.x[lp.rate]))


class _GroupLP:
    """The rows and columns of the LP (see the module docstring), in the units of
    :class:`~fabricopt.failures.plane_lp._PlaneLP` (capacities over the largest NIC's, each
    endpoint pair asking ``1 / (n - 1)``)."""

    def __init__(self, pl: Planes) -> None:
        self.pl = pl
        cl = server_classes(pl)
        ct = self.ct = counts(pl)
        base = _PlaneLP(pl, cl, ct)
        self.b, self.cl, self.cap, self.unit, self.d0 = (base.b, base.cl, base.cap, base.unit,
                                                        base.d0)
        self.reps = base.reps
        ng, npl = int(pl.leaf_group.max()) + 1, pl.n_planes
        self.class_of = np.empty(ng, dtype=np.int64)
        for k, leaves in enumerate(cl.leaves):
            self.class_of[pl.leaf_group[leaves[0]]] = k
        self.group_zone = np.empty(ng, dtype=np.int64)
        self.group_zone[pl.leaf_group] = pl.leaf_zone
        self.ng, self.npl = ng, npl
        self.rate = self.b.col()  # t: every pair's shares sum to it
        self._shares()
        self._turns()
        self._routes()
        self._hubs()

    def _shares(self) -> None:
        b, ng, npl, size = self.b, self.ng, self.npl, self.ct.group.astype(float)
        self.alpha = b.cols(ng * npl).reshape(ng, npl)
        self.beta = b.cols(ng * npl).reshape(ng, npl)
        self.a_total, self.b_total = b.col(), b.col()
        self.gamma = b.cols(npl)
        self.a_sum, self.b_sum = b.cols(npl), b.cols(npl)
        for g in range(ng):
            b.eq([(int(x), 1.0) for x in self.alpha[g]] + [(self.a_total, -1.0)])
            b.eq([(int(x), 1.0) for x in self.beta[g]] + [(self.b_total, -1.0)])
        b.eq([(int(x), 1.0) for x in self.gamma]
             + [(self.a_total, 1.0), (self.b_total, 1.0), (self.rate, -1.0)])
        for p in range(npl):
            b.eq([(int(self.a_sum[p]), 1.0)]
                 + [(int(self.alpha[g, p]), -size[g]) for g in range(ng)])
            b.eq([(int(self.b_sum[p]), 1.0)]
                 + [(int(self.beta[g, p]), -size[g]) for g in range(ng)])

    def _turns(self) -> None:
        """Pairs on one leaf turn there; pairs on two leaves of a group turn at the leaves
        of the group in its shares ``turn[g]``."""
        b, pl, cl, ct, d0 = self.b, self.pl, self.cl, self.ct, self.d0
        home = ct.home
        self.turn: dict[int, np.ndarray] = {}
        across = defaultdict(lambda: np.zeros(2))  # class -> per server (up, down)
        for a, c in ct.pairs.tolist():
            k = int(self.class_of[pl.leaf_group[a]])
            rep = self.reps[k]
            sh = ct.server_home
            across[k] += (cl.homes[k].get(a, 0) * (home[c] - sh.get((rep, c), 0)) * d0,
                          cl.homes[k].get(c, 0) * (home[a] - sh.get((rep, a), 0)) * d0)
        for k, leaves in enumerate(cl.leaves):
            rep = self.reps[k]
            for h, m in cl.homes[k].items():
                same = m * (home[h] - ct.server_home.get((rep, h), 0)) * d0
                up, down = _nic_cap(cl, k, h)
                b.load(("nic", k, h, "up"), up, [(self.rate, same)], 1.0)
                b.load(("nic", k, h, "down"), down, [(self.rate, same)], 1.0)
            volume = across.get(k)
            if volume is None or not volume.any():
                continue
            cols = self.turn[k] = b.cols(len(leaves))
            b.eq([(int(x), 1.0) for x in cols] + [(self.rate, -1.0)])
            for x, leaf in zip(cols.tolist(), leaves.tolist(), strict=True):
                up, down = _nic_cap(cl, k, leaf)
                b.load(("nic", k, leaf, "up"), up, [(x, float(volume[0]))], 1.0)
                b.load(("nic", k, leaf, "down"), down, [(x, float(volume[1]))], 1.0)

    def _routes(self) -> None:
        """Each server's volume on each plane (per direction), over its NICs whose leaves
        have the plane's links."""
        b, pl, cl, ct, d0 = self.b, self.pl, self.cl, self.ct, self.d0
        n = float(ct.n)
        self.routes = plane_routes(pl, cl, np.zeros(pl.n_leaves, dtype=bool))
        self.route_cols: list[tuple[np.ndarray, np.ndarray]] = []
        for (k, _z, p), rts in zip(self.routes.keys, self.routes.routes, strict=True):
            g = int(pl.leaf_group[cl.leaves[k][0]])
            m = float(sum(cl.homes[k].values()))
            out = n - float(ct.group[g])
            pair = []
            for own, other, other_sum in ((self.alpha, self.beta, self.b_sum),
                                          (self.beta, self.alpha, self.a_sum)):
                # What one server sends (receives) on plane p: m endpoints, each to the
                # n - G endpoints outside its group, less its group's own shifts.
                volume = [(int(own[g, p]), m * out * d0), (int(other_sum[p]), m * d0),
                          (int(other[g, p]), -m * float(ct.group[g]) * d0),
                          (int(self.gamma[p]), m * out * d0)]
                direct = [i for i, rt in enumerate(rts) if rt.kind == "direct"]
                cols = np.full(len(rts), -1)
                cols[direct] = b.cols(len(direct))
                b.eq([(int(cols[i]), 1.0) for i in direct] + [(c, -v) for c, v in volume])
                entry = own is self.beta
                for i in direct:
                    _route_loads(b, pl, cl, k, p, rts[i], entry, [(int(cols[i]), 1.0)], 1.0,
                                 self.cap)
                pair.append(cols)
            self.route_cols.append((pair[0], pair[1]))

    def _hubs(self) -> None:
        """Between zones, each plane's volume out of (into) a zone, evenly over its hubs."""
        b, pl, ct, d0 = self.b, self.pl, self.ct, self.d0
        if pl.n_zones < 2:
            return
        n = float(ct.n)
        size = ct.group.astype(float)
        for z in range(pl.n_zones):
            mine = np.flatnonzero(self.group_zone == z)
            zn = float(size[mine].sum())
            for p in range(self.npl):
                rows = pl.hubs[p]
                if not rows:
                    continue
                for own, other, other_sum, side in ((self.alpha, self.beta, self.b_sum, 1),
                                                    (self.beta, self.alpha, self.a_sum, 2)):
                    volume = b.col()
                    b.eq([(volume, -1.0)]
                         + [(int(own[g, p]), (n - zn) * size[g] * d0) for g in mine]
                         + [(int(other_sum[p]), zn * d0)]
                         + [(int(other[g, p]), -zn * size[g] * d0) for g in mine]
                         + [(int(self.gamma[p]), zn * (n - zn) * d0)])
                    share = 1.0 / len(rows)
                    for row in rows:
                        arc = int(row[side][z])
                        b.load(("arc", arc), self.cap[arc], [(volume, 1.0)], share)

    def proof(self, x: np.ndarray) -> PlaneProof:
        """The LP's point ``x`` as shares that sum to one (clipped at 0: an interior
        point's tolerances)."""
        pl, ct, npl = self.pl, self.ct, self.npl
        t = float(x[self.rate])
        a_total = max(float(x[self.a_total]) / t, 0.0)
        b_total = max(float(x[self.b_total]) / t, 0.0)
        if a_total + b_total > 1.0:
            a_total, b_total = a_total / (a_total + b_total), b_total / (a_total + b_total)
        alpha = _rows_to(np.clip(x[self.alpha], 0.0, None), a_total)
        beta = _rows_to(np.clip(x[self.beta], 0.0, None), b_total)
        gamma = _rows_to(np.clip(x[self.gamma], 0.0, None)[None, :],
                         1.0 - a_total - b_total)[0]
        group = pl.leaf_group
        nz = pl.n_zones
        exits, entries = [], []
        for cols_out, cols_in in self.route_cols:
            exits.append(_route_shares(x, cols_out))
            entries.append(_route_shares(x, cols_in))
        rows, cols, vals = [], [], []
        for i, (a, _c) in enumerate(ct.pairs.tolist()):
            k = int(self.class_of[group[a]])
            t = np.clip(x[self.turn[k]], 0.0, None)
            t = t / t.sum() if t.sum() > 0 else np.full(len(t), 1.0 / len(t))
            rows += [i] * len(t)
            cols += self.cl.leaves[k].tolist()
            vals += t.tolist()
        turn = sp.csr_matrix((vals, (rows, cols)), shape=(len(ct.pairs), pl.n_leaves))
        hubs = {(z1, z2, p): np.full(len(pl.hubs[p]), 1.0 / len(pl.hubs[p]))
                for z1 in range(nz) for z2 in range(nz) for p in range(npl)
                if z1 != z2 and pl.hubs[p]}
        return PlaneProof(np.zeros(pl.n_leaves, dtype=bool), alpha[group], beta[group],
                          np.broadcast_to(gamma, (nz, nz, npl)).copy(),
                          np.zeros((len(ct.pairs), npl)), np.zeros(len(ct.pairs)),
                          tuple(exits), tuple(entries), hubs, turn=turn)


def _rows_to(m: np.ndarray, total: float) -> np.ndarray:
    """``m`` with each row scaled to sum to ``total`` (a row of zeros spread evenly)."""
    have = m.sum(axis=1, keepdims=True)
    even = np.full_like(m, total / max(m.shape[1], 1))
    return np.where(have > 0, m * (total / np.where(have > 0, have, 1.0)), even)


def _route_shares(x: np.ndarray, cols: np.ndarray) -> np.ndarray:
    """The shares of a server's routes (-1: a route the LP did not use, share 0)."""
    used = cols >= 0
    v = np.zeros(len(cols))
    v[used] = np.clip(x[cols[used]], 0.0, None)
    if v.sum() > 0:
        return v / v.sum()
    v[np.flatnonzero(used)[:1]] = 1.0  # nothing to send: any direct route
    return v


__all__ = ["GROUP_IPM_SECONDS_PER_NONZERO", "GroupPlanes", "solve_group_planes", "whole_groups"]
