"""Cuts around a few leaves of a group and their servers: upper bounds a hierarchy misses.

In a Clos of servers (:mod:`fabricopt.failures.planes`) a failure's cost is often local: the
leaves of one group (tied by servers that span them) lost some uplinks, and the traffic
of their servers must leave through the rest. The hierarchy cuts of
:mod:`fabricopt.flow.bounds` cut whole groups; here every run of consecutive leaves of a
group is cut with the servers hung only from it, and each server that spans the run's edge
on either side, whichever is tighter. What crosses such a cut is the run's uplinks and the
NIC links of the spanning servers to the leaves on the other side; all-to-all traffic
between :math:`|S|` endpoints inside and :math:`n - |S|` outside must cross it, so

.. math:: \\theta \\le \\frac{c(S)}{|S|\\,(n - |S|)\\,d}.

On a 4,096-GPU 3-tier 2:1 Clos with 1% of its links failed (seed 1) the best such cut,
three leaves that lost four uplinks and the server spanning their edge, is 196.73 Gb/s per
GPU, where the best hierarchy cut (their group of four leaves) is 198.57.
"""

from __future__ import annotations

import itertools
from collections import defaultdict
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from ..flow.proof import ArcLengths
from .planes import Planes

#: Servers spanning a run's edge are tried on both sides in every combination up to this
#: many; above it, all inside or all outside.
BORDER_COMBINATIONS = 4


def leaf_run_cut(pl: Planes, gbps: float) -> tuple[float, np.ndarray]:
    """The tightest cut around a run of leaves (see the module docstring) for all-to-all
    traffic of ``gbps`` per pair: ``(theta bound, lengths)``, the lengths 1 on the arcs
    that leave (or enter) the cut's side; ``(inf, zeros)`` when no run bounds anything."""
    ga = pl.ga
    n = len(pl.endpoints)
    best, best_side = np.inf, None
    # Per leaf, its capacity up and down; per server, its NIC arcs per leaf.
    up_cap = np.zeros(pl.n_leaves)
    down_cap = np.zeros(pl.n_leaves)
    for arcs, caps in ((pl.up, up_cap), (pl.down, down_cap)):
        ok = arcs >= 0
        np.add.at(caps, np.nonzero(ok)[0], ga.capacity[arcs[ok]])
    nic_up: list[dict[int, float]] = [defaultdict(float) for _ in range(pl.n_servers)]
    nic_down: list[dict[int, float]] = [defaultdict(float) for _ in range(pl.n_servers)]
    for e in range(n):
        s = int(pl.server[e])
        arcs, leaves, backs = pl.nics(e)
        for a, leaf, b in zip(arcs.tolist(), leaves.tolist(), backs.tolist(), strict=True):
            nic_up[s][leaf] += ga.capacity[a]
            nic_down[s][leaf] += ga.capacity[b]
    size = np.bincount(pl.server, minlength=pl.n_servers)
    on_leaf: dict[int, list[int]] = defaultdict(list)
    for s in range(pl.n_servers):
        for leaf in nic_up[s]:
            on_leaf[leaf].append(s)
    for g in np.unique(pl.leaf_group).tolist():
        leaves = np.flatnonzero(pl.leaf_group == g).tolist()
        for i in range(len(leaves)):
            for j in range(i + 1, len(leaves) + 1):
                run = set(leaves[i:j])
                touching = sorted({s for leaf in run for s in on_leaf[leaf]})
                whole = [s for s in touching if set(nic_up[s]) <= run]
                border = [s for s in touching if not set(nic_up[s]) <= run]
                if len(border) <= BORDER_COMBINATIONS:
                    choices = itertools.chain.from_iterable(
                        itertools.combinations(border, r) for r in range(len(border) + 1))
                else:
                    choices = iter([(), tuple(border)])
                for inside in choices:
                    servers = whole + list(inside)
                    count = int(size[servers].sum())
                    if count == 0 or count == n:
                        continue
                    outside = [s for s in border if s not in inside]
                    cap_out = (up_cap[list(run)].sum()
                               + sum(c for s in inside for x, c in nic_up[s].items()
                                     if x not in run)
                               + sum(c for s in outside for x, c in nic_down[s].items()
                                     if x in run))
                    cap_in = (down_cap[list(run)].sum()
                              + sum(c for s in inside for x, c in nic_down[s].items()
                                    if x not in run)
                              + sum(c for s in outside for x, c in nic_up[s].items()
                                    if x in run))
                    bound = min(cap_out, cap_in) / (count * (n - count) * gbps)
                    if bound < best:
                        best, best_side = bound, (run, servers, cap_out <= cap_in)
    lengths = np.zeros(ga.n_arcs)
    if best_side is None:
        return np.inf, lengths
    run, servers, outward = best_side
    side = np.zeros(ga.n_nodes, dtype=bool)
    side[pl.leaf_node[list(run)]] = True
    side[pl.endpoints[np.isin(pl.server, servers)]] = True
    for s in servers:
        side[pl.server_switches[s]] = True
    crossing = (side[ga.tail] & ~side[ga.head]) if outward else (~side[ga.tail] & side[ga.head])
    lengths[crossing] = 1.0
    return float(best), lengths


@dataclass(frozen=True)
class LeafRunCut(ArcLengths):
    """The upper proof of a cut around a run of leaves of one group and their servers
    (:func:`leaf_run_cut`): its arcs as lengths, 1 on each arc that crosses it, re-checked
    as every :class:`~fabricopt.flow.proof.ArcLengths` is."""

    STAGES: ClassVar[tuple[str, ...]] = ("planes",)


__all__ = ["BORDER_COMBINATIONS", "LeafRunCut", "leaf_run_cut"]
