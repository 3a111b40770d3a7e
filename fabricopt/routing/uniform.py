"""Uniform traffic routed by counting destinations instead of listing pairs.

All-to-all over 16,384 GPUs is 268 million ordered pairs; what a destination-based routing
needs of them is far less: for every source, how many destinations of each destination class
each network carries (see :mod:`fabricopt.routing.fluid`), and how many sources each
destination hears from. Those numbers follow from the networks' reachability groups
(:meth:`~fabricopt.routing.networks.Network.reach_groups`):

* the **scale-up** network's pairs (GPUs of one NVLink domain) are few: they are listed;
* the **scale-out** network takes every other pair it reaches. With :math:`N[g, c]` the
  destinations of reach group :math:`g` and class :math:`c`, a source of send group
  :math:`h` reaches :math:`\\sum_g M[h, g]\\, N[g, c]` destinations of class :math:`c`
  (:math:`M` says which groups meet), a sparse product over groups; the listed scale-up
  pairs and the source itself are then taken back out, one by one.

When the two networks leave a pair to the whole-fabric network, or a network keeps no group table,
the caller lists the pairs as before (:func:`add_uniform` returns None and adds nothing).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from .fluid import FluidRouting
from .networks import Networks

#: Most scale-up pairs listed one by one.
MAX_LISTED_PAIRS = 20_000_000
#: Largest (source x destination class) table of the scale-out network built at once.
MAX_COUNT_TABLE = 64_000_000


def _group_pairs(send: np.ndarray, recv: np.ndarray, meets: sp.csr_matrix,
                 eps: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """Every pair ``(s, t)`` of ``eps`` (endpoint positions) whose groups meet, ``s != t``;
    None when there are more than :data:`MAX_LISTED_PAIRS`."""
    s_grp, r_grp = send[eps], recv[eps]
    n_s = np.bincount(s_grp, minlength=meets.shape[0]).astype(float)
    n_r = np.bincount(r_grp, minlength=meets.shape[1]).astype(float)
    if float(n_s @ (meets.astype(float) @ n_r)) > MAX_LISTED_PAIRS:
        return None
    s_order, r_order = np.argsort(s_grp, kind="stable"), np.argsort(r_grp, kind="stable")
    s_cut = np.searchsorted(s_grp[s_order], np.arange(meets.shape[0] + 1))
    r_cut = np.searchsorted(r_grp[r_order], np.arange(meets.shape[1] + 1))
    src, dst = [], []
    coo = meets.tocoo()
    for a, b in zip(coo.row, coo.col, strict=True):
        senders = eps[s_order[s_cut[a]:s_cut[a + 1]]]
        receivers = eps[r_order[r_cut[b]:r_cut[b + 1]]]
        if len(senders) and len(receivers):
            src.append(np.repeat(senders, len(receivers)))
            dst.append(np.tile(receivers, len(senders)))
    if not src:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    s, t = np.concatenate(src), np.concatenate(dst)
    keep = s != t
    return s[keep], t[keep]


def add_uniform(networks: Networks, fluid: list[FluidRouting | None], eps: np.ndarray,
                gbps: float) -> list[int] | None:
    """Add all-to-all at ``gbps`` per ordered pair of the endpoint positions ``eps`` to the
    networks' accumulators, counted (see the module docstring); the pairs per network, or None
    (nothing added) when the pairs must be listed instead."""
    up, out = networks.networks[0], networks.networks[1]
    T = len(networks.endpoint_index)
    n = len(eps)
    # The scale-up network: its pairs, listed.
    if up is not None:
        groups = up.reach_groups()
        if groups is None:
            return None
        listed = _group_pairs(*groups, eps)
        if listed is None:
            return None
        in_eps = np.zeros(T, dtype=bool)
        in_eps[eps] = True
        ds, dt = up.direct_pairs()
        keep = in_eps[ds] & in_eps[dt] & (ds != dt)
        if keep.any():
            key = np.unique(np.concatenate([listed[0] * T + listed[1],
                                            ds[keep] * T + dt[keep]]))
            listed = (key // T, key % T)
        s0, t0 = listed
    else:
        s0 = t0 = np.zeros(0, dtype=np.int64)
    if out is None:
        if len(s0) != n * (n - 1):
            return None
        if len(s0):
            fluid[0].add(s0, t0, np.full(len(s0), gbps))  # type: ignore[union-attr]
        return [len(s0), 0, 0]
    # The scale-out network: every pair it reaches, counted by groups, less the listed pairs
    # and the sources themselves.
    groups = out.reach_groups()
    acc = fluid[1]
    if groups is None or len(out.direct_pairs()[0]) or acc is None or acc.per_target:
        return None
    if n * acc.n_cols > MAX_COUNT_TABLE:
        return None
    send, recv, meets = groups
    s_grp, r_grp = send[eps], recv[eps]
    cols = acc.col_of_endpoint[eps]
    per_group = sp.csr_matrix((np.ones(n), (r_grp, cols)), shape=(meets.shape[1], acc.n_cols))
    reach = (meets.astype(float) @ per_group).tocsr()
    table = reach[s_grp].toarray()                      # destinations per (source, class)
    senders = np.bincount(s_grp, minlength=meets.shape[0]).astype(float)
    heard = np.zeros(T)
    heard[eps] = (meets.T.astype(float) @ senders)[r_grp]  # sources per destination
    zs = np.concatenate([s0, eps])
    zt = np.concatenate([t0, eps])
    both = out.reaches(zs, zt)
    row_of = np.full(T, -1, dtype=np.int64)
    row_of[eps] = np.arange(n)
    np.subtract.at(table, (row_of[zs[both]], acc.col_of_endpoint[zt[both]]), 1.0)
    np.subtract.at(heard, zt[both], 1.0)
    pairs_out = int(round(table.sum()))
    if len(s0) + pairs_out != n * (n - 1):
        return None  # some pairs need the whole-fabric network
    if len(s0):
        fluid[0].add(s0, t0, np.full(len(s0), gbps))  # type: ignore[union-attr]
    acc.add_table(eps, table * gbps, heard * gbps, pairs_out)
    return [len(s0), pairs_out, 0]
