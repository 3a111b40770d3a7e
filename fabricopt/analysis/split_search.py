"""A better bisection cut near a good one: whole groups of the hierarchy swapped across it.

The candidate splits of :mod:`~fabricopt.analysis.bisection` come from the structure (pods,
units, spectral order); on a fabric with failed links the cheapest split is usually one of
them with a few groups exchanged (a leaf whose uplinks failed moved to the side its failed
links then stop crossing, a host cut off from the network put in the half it costs nothing
in). Here, from a cut ``S`` (the nodes on the sending side, the arcs leaving it its
capacity):

* every group ``g`` of every partition of the hierarchy (a node alone, a server, a leaf with
  its hosts, a pod) is weighed by what the cut would gain by moving ``g``'s nodes out of
  ``S`` and, separately, into it (one pass over the arcs, per partition);
* pairs that keep the halves equal (as many endpoints leave ``S`` as enter it) are formed
  from the best of each count, their exact capacity computed from the arcs, and the best
  taken when it is below the cut;
* the new split's switches are then placed by an exact minimum cut (which can only lower
  it), and the search goes on from there until no pair helps or the rounds run out.

Every cut returned is a split of the endpoints into halves and the arcs leaving one side,
its capacity summed from the fabric's arcs: an upper bound on the bisection, whatever the
search did.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..flow.budget import now
from ..graph_arrays import GraphArrays
from .cuts import Cut, cut_capacity

#: Best groups of each endpoint count kept per direction when pairs are formed.
PAIR_WIDTH = 6
#: Rounds of (best swap, exact re-placement of the switches).
ROUNDS = 40


def swap_groups(ga: GraphArrays, ep_idx: np.ndarray, cut: Cut, partitions: list[np.ndarray],
                place: Callable[[np.ndarray], Cut], rounds: int = ROUNDS,
                deadline: float | None = None) -> Cut:
    """The least cut found from ``cut`` by swapping whole groups of ``partitions`` across it
    (module docstring); ``cut`` itself when no swap lowers it. ``place(mask)`` is the best
    cut of an endpoint split (``mask`` over ``ep_idx``: True on the sending side).
    ``deadline`` (a reading of :func:`~fabricopt.flow.budget.now`): no round is begun once
    it has passed (the best cut so far is returned, a cut like any other).

    >>> import fabricopt as fo
    >>> from fabricopt.analysis.cuts import min_cut
    >>> from fabricopt.flow.bounds import hierarchy_partitions
    >>> fab = fo.leaf_spine(4, 1, 2, link_gbps=1.0)   # 4 leaves of 2 hosts, 1 uplink each
    >>> ga = GraphArrays.from_fabric(fab)
    >>> ep = np.array([ga.index[e] for e in fab.endpoints])
    >>> def place(mask):
    ...     return min_cut(ga, ep[mask], ep[~mask])
    >>> bad = place(np.array([1, 0, 1, 0, 1, 0, 1, 0], dtype=bool))  # every leaf split
    >>> better = swap_groups(ga, ep, bad, hierarchy_partitions(fab, ga), place)
    >>> bad.capacity, better.capacity         # 4 host links, then 2 leaves' uplinks
    (4.0, 2.0)
    """
    is_ep = np.zeros(ga.n_nodes, dtype=bool)
    is_ep[ep_idx] = True
    best = cut
    for _ in range(rounds):
        if deadline is not None and now() >= deadline:
            break
        side = best.side
        found: tuple[float, np.ndarray] | None = None
        for label in partitions:
            trial = _best_swap(ga, is_ep, side, label)
            if trial is not None and trial[0] < best.capacity * (1 - 1e-12) and (
                    found is None or trial[0] < found[0]):
                found = trial
        if found is None:
            return best
        placed = place(found[1][ep_idx])
        better = placed if placed.capacity <= found[0] else Cut(
            found[1], *cut_capacity(ga, found[1]))
        if not better.capacity < best.capacity * (1 - 1e-12):
            return best
        best = better
    return best


def _best_swap(ga: GraphArrays, is_ep: np.ndarray, side: np.ndarray, label: np.ndarray,
               ) -> tuple[float, np.ndarray] | None:
    """The least cut reached by moving one group of ``label`` out of ``side`` and one into
    it with as many endpoints, and that side; None when no such pair exists."""
    groups = int(label.max()) + 1
    t, h, c = ga.tail, ga.head, ga.capacity
    lt, lh = label[t], label[h]
    inside = lt == lh
    was = c * (side[t] & ~side[h])                # what each arc adds to the cut now
    # Moving group g out of S: its arcs inside and leaving add 0; arcs entering it from S
    # add their capacity. Moving it in: arcs leaving it to the outside add theirs.
    to_out = (np.bincount(lh[~inside], weights=c[~inside] * side[t[~inside]], minlength=groups)
              - np.bincount(lt, weights=was, minlength=groups)
              - np.bincount(lh[~inside], weights=was[~inside], minlength=groups))
    to_in = (np.bincount(lt[~inside], weights=c[~inside] * ~side[h[~inside]],
                         minlength=groups)
             - np.bincount(lt, weights=was, minlength=groups)
             - np.bincount(lh[~inside], weights=was[~inside], minlength=groups))
    leave = np.bincount(label[is_ep & side], minlength=groups)     # endpoints leaving S
    enter = np.bincount(label[is_ep & ~side], minlength=groups)    # endpoints entering S
    best: tuple[float, np.ndarray] | None = None
    for k in np.intersect1d(leave[leave > 0], enter[enter > 0]):
        outs = np.flatnonzero(leave == k)
        ins = np.flatnonzero(enter == k)
        outs = outs[np.argsort(to_out[outs], kind="stable")[:PAIR_WIDTH]]
        ins = ins[np.argsort(to_in[ins], kind="stable")[:PAIR_WIDTH]]
        for g in outs:
            for j in ins:
                # The two moves' gains add up but for arcs between the two groups; a pair
                # whose sum gains nothing is passed over (its exact value costs a pass).
                if g == j or to_out[g] + to_in[j] >= 0:
                    continue
                trial = side.copy()
                trial[label == g] = False
                trial[label == j] = True
                value, _ = cut_capacity(ga, trial)
                if best is None or value < best[0]:
                    best = (value, trial)
    return best


__all__ = ["PAIR_WIDTH", "ROUNDS", "swap_groups"]
