"""Ports a fabric pays for and no traffic needs, read from its structure alone (no LP).

Two checks on the fabric's arrays:

* **Undersubscribed leaves.** A leaf (a switch its GPUs reach by a scale-out link) with more
  capacity up, to switches of a higher ``layer``, than down, to its GPUs or their NICs: its
  GPUs never send more up than they inject, so the rest of its uplinks, and the spine ports
  at their other end, carry only traffic relayed through the leaf (none in a full
  leaf-spine, where every spine reaches every leaf).
* **Idle switches.** A switch with fewer than two distinct neighbours lies on no path between
  two other nodes (a flow through it would come back the way it went), and a switch no GPU
  reaches carries nothing: no traffic can use either.

Fabrics without ``layer`` attributes (direct networks such as a dragonfly, where a router's
uplinks also carry transit traffic) are not checked for the first.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components

from ..graph_arrays import FabricShape, GraphArrays

__all__ = ["PortUse", "port_use", "port_use_fits"]

#: Seconds :func:`port_use` costs per arc, its arrays read first: 0.2 s CPU on the 301,344
#: arcs of Meta's 24K-GPU RoCE cluster (6.6e-7), with a third in hand. Under a time limit the
#: check is begun only when expected to end within it (``fabricopt solve --time-limit``).
SECONDS_PER_ARC = 1.1e-6

#: Relative margin above which a leaf's uplink counts as more than its downlink.
TOLERANCE = 1e-9
#: Names a one-line report lists before "...".
NAMES_SHOWN = 3


@dataclass(frozen=True)
class PortUse:
    """What :func:`port_use` finds: undersubscribed leaves as ``(leaf, down_gbps, up_gbps)``
    and the switches no traffic can use."""

    undersubscribed: list[tuple[Hashable, float, float]] = field(default_factory=list)
    idle_switches: list[Hashable] = field(default_factory=list)

    def line(self) -> str | None:
        """One line for a printout, or None when nothing is unused.

        >>> print(PortUse([("leaf0", 1600.0, 3200.0)], ["spine0"]).line())
        spare ports      1 leaf with more uplink than downlink (leaf0: 3,200 Gb/s up, 1,600 \
down: its GPUs send at most 1,600 up, the rest only relays, e.g. around a failed link); 1 \
switch no traffic can use (spine0)
        """
        parts = []
        if self.undersubscribed:
            n = len(self.undersubscribed)
            leaf, down, up = self.undersubscribed[0]
            parts.append(f"{n:,} lea{'f' if n == 1 else 'ves'} with more uplink than downlink "
                         f"({leaf}: {up:,.0f} Gb/s up, {down:,.0f} down: its GPUs send at "
                         f"most {down:,.0f} up, the rest only relays, e.g. around a failed "
                         "link" + (f"; and {n - 1:,} more" if n > 1 else "")
                         + ")")
        if self.idle_switches:
            n = len(self.idle_switches)
            names = ", ".join(map(str, self.idle_switches[:NAMES_SHOWN]))
            parts.append(f"{n:,} switch{'' if n == 1 else 'es'} no traffic can use ({names}"
                         + (", ..." if n > NAMES_SHOWN else "") + ")")
        return ("spare ports      " + "; ".join(parts)) if parts else None


def port_use_fits(fab: Any, left: float | None) -> bool:
    """Whether :func:`port_use` of ``fab`` is expected to end within ``left`` seconds (by its
    arcs, :data:`SECONDS_PER_ARC`); always when ``left`` is None (no limit).

    >>> import fabricopt as fo
    >>> port_use_fits(fo.fat_tree(4), None), port_use_fits(fo.fat_tree(4), 0.0)
    (True, False)
    """
    return left is None or SECONDS_PER_ARC * fab.graph.number_of_edges() <= left


def port_use(fab: Any, arrays: GraphArrays | None = None) -> PortUse:
    """Undersubscribed leaves and switches no traffic can use (see the module docstring).

    Examples
    --------
    One leaf of 4 GPUs at 400 Gb/s with two spines: nothing leaves the leaf, so neither
    spine carries anything (one neighbour each), and the leaf's 800 Gb/s up is below its
    1,600 down (not undersubscribed).

    >>> import fabricopt as fo
    >>> use = port_use(fo.leaf_spine(leaves=1, spines=2, endpoints_per_leaf=4))
    >>> use.undersubscribed, use.idle_switches
    ([], ['spine0', 'spine1'])
    >>> port_use(fo.fat_tree(4)).line() is None
    True
    """
    shape = FabricShape.of(fab, arrays)
    ga = shape.arrays
    n = ga.n_nodes
    real = ga.tail != ga.head  # self-loops join nothing
    tail, head, capacity = ga.tail[real], ga.head[real], ga.capacity[real]
    near = np.zeros(n, dtype=bool)
    near[shape.endpoint_index] = True
    near |= np.array([r == "nic" for r in shape.attribute("role")], dtype=bool)
    layer = shape.layer
    # Per node: capacity out to its GPUs (and NICs), and up to switches of a higher layer.
    down = np.bincount(tail, capacity * near[head], minlength=n)
    up = np.bincount(tail, capacity * (~near[head] & (layer[head] > layer[tail])), minlength=n)
    over = shape.leaves & (layer >= 0) & (up > down * (1 + TOLERANCE))
    out = [(ga.nodes[i], float(down[i]), float(up[i])) for i in np.flatnonzero(over)]
    # Distinct neighbours, either direction; and the components that hold a GPU.
    joined = sp.csr_matrix((np.ones(len(tail)), (tail, head)), shape=(n, n))
    joined = ((joined + joined.T) > 0).astype(np.int8)
    neighbours = np.asarray(joined.sum(axis=1)).ravel()
    label = connected_components(joined, directed=False)[1]
    with_gpu = np.zeros(label.max() + 1 if n else 0, dtype=bool)
    with_gpu[label[shape.endpoint_index]] = True
    switch = np.array([r == "switch" for r in shape.attribute("role")], dtype=bool)
    idle = [ga.nodes[i] for i in np.flatnonzero(switch & ((neighbours < 2) | ~with_gpu[label]))]
    return PortUse(out, idle)
