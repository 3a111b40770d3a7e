"""What the two-phase rate reads off a fabric, once for every hub level it tries: the
candidate hubs (the switches at each hop distance from the endpoints), the arrays, each arc's
reverse (phase 2 runs phase 1 backwards), the scale-up arcs, the nodes on no
endpoint-to-endpoint path, the hubs' shares and the unit the LPs count the rate in.

>>> import fabricopt as fo
>>> arrays = _Arrays.of(fo.fat_tree(4))
>>> arrays.ga.n_arcs, int(arrays.scale_up.sum())
(96, 0)
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import shortest_path

from ...errors import InvalidParameterError
from ...fabric import check_endpoint_group
from ...graph_arrays import FabricShape, GraphArrays
from ..symmetric import fabric_arc_orbits, sorted_unique
from .bounds import group_capacities

__all__ = ["hub_levels", "hub_nodes", "hub_shares", "rate_scale"]


def hub_levels(fab: Any, endpoints: Iterable[Hashable] | None = None,
               ) -> dict[int, tuple[Hashable, ...]]:
    """Candidate hub sets: the network switches at each hop distance from the nearest
    endpoint (1: leaves, 2: spines, 3: cores of a 3-tier Clos), or ``{0: endpoints}`` in a
    direct network with no switches.

    Switches with only scale-up links (NVSwitches; see :func:`fabricopt.tiers.is_scale_up_arc`)
    count only when there is no other switch: in a cluster, detouring through another
    server's NVSwitch would cost scale-out bandwidth twice. Every level is invariant under the
    automorphisms that keep the endpoints, so the symmetric method applies to each.

    >>> import fabricopt as fo
    >>> {level: len(hubs) for level, hubs in hub_levels(fo.fat_tree(4)).items()}
    {1: 8, 2: 8, 3: 4}
    """
    eps = check_endpoint_group("hub_levels", fab, endpoints)
    return _levels(fab, GraphArrays.from_fabric(fab), eps)


def hub_nodes(fab: Any, endpoints: Iterable[Hashable] | None = None,
              level: int | None = None) -> tuple[Hashable, ...]:
    """The hubs at ``level`` of :func:`hub_levels`; by default the farthest — the top tier
    of a Clos (spines, cores; the rail leaves of a rail-only cluster).

    >>> import fabricopt as fo
    >>> len(hub_nodes(fo.fat_tree(4)))  # the (k/2)^2 core switches
    4
    """
    levels = hub_levels(fab, endpoints)
    return levels[_check_level(levels, level)]


def _check_level(levels: dict[int, tuple[Hashable, ...]], level: int | None) -> int:
    """``level`` (default: the farthest) after checking it is one of ``levels``."""
    if level is None:
        return max(levels)
    if level not in levels:
        raise InvalidParameterError(f"valiant_rate(): hubs, as a level, must be one of "
                                    f"{sorted(levels)} (hops from the endpoints), got {level!r}")
    return level


def _levels(fab: Any, ga: GraphArrays, eps: tuple[Hashable, ...],
            dead: np.ndarray | None = None, shape: FabricShape | None = None,
            ) -> dict[int, tuple[Hashable, ...]]:
    """:func:`hub_levels` on arrays already read (and :func:`_dead_ends` and the fabric's
    shape on them, if known)."""
    shape = shape if shape is not None else FabricShape.of(fab, ga)
    ep_idx = np.array([ga.index[e] for e in eps])
    others = np.setdiff1d(np.arange(ga.n_nodes), np.array([ga.index[e] for e in fab.endpoints]))
    network = np.zeros(ga.n_nodes, dtype=bool)
    scale_out = ~shape.scale_up
    network[ga.tail[scale_out]] = True
    network[ga.head[scale_out]] = True
    if network[others].any():
        # Across servers, a detour through another server's NVSwitch costs scale-out twice:
        # the network's switches are the hubs. Endpoints all in one scale-up domain (one
        # server with its rail leaves) are better served by its own NVSwitches.
        up = ~scale_out
        domain = shape.domain  # components of the scale-up arcs
        one = len(np.unique(domain[ep_idx])) == 1 and up.any()
        kept = others[~network[others] & (domain[others] == domain[ep_idx[0]])] if one else []
        others = kept if len(kept) else others[network[others]]
    others = others[~(_dead_ends(ga, ep_idx) if dead is None else dead)[others]]
    # Hop distance from the nearest endpoint: one BFS from a super source.
    n = ga.n_nodes
    tails = np.concatenate([ga.tail, np.full(len(ep_idx), n)])
    heads = np.concatenate([ga.head, ep_idx])
    adj = sp.csr_matrix((np.ones(len(tails)), (tails, heads)), shape=(n + 1, n + 1))
    dist = shortest_path(adj, directed=True, unweighted=True, indices=n)[:n]
    reach = others[np.isfinite(dist[others])]
    if len(reach) == 0:
        return {0: tuple(eps)}
    levels = dist[reach].astype(int) - 1  # the super source adds one hop
    return {int(d): tuple(ga.nodes[i] for i in reach[levels == d]) for d in np.unique(levels)}


def _dead_ends(ga: GraphArrays, keep: np.ndarray) -> np.ndarray:
    """Mask of the nodes on no path between two nodes of ``keep``: peeled off, leaf by leaf,
    as nodes outside ``keep`` with at most one neighbour (a switch hung off a core, say)."""
    a = np.minimum(ga.tail, ga.head)
    b = np.maximum(ga.tail, ga.head)
    # Each link once, as (smaller end, larger end): unique codes, not unique rows (a
    # structured sort, ten times slower on 300,000 arcs); the same pairs in the same order.
    n = np.int64(ga.n_nodes)
    code = sorted_unique(a[a != b] * n + b[a != b])
    pairs = np.stack([code // n, code % n], axis=1)
    alive = np.ones(ga.n_nodes, dtype=bool)
    kept = np.zeros(ga.n_nodes, dtype=bool)
    kept[keep] = True
    while True:
        live = alive[pairs[:, 0]] & alive[pairs[:, 1]]
        degree = np.bincount(pairs[live].ravel(), minlength=ga.n_nodes)
        drop = alive & ~kept & (degree <= 1)
        if not drop.any():
            return ~alive
        alive &= ~drop



def _reverse_arcs(ga: GraphArrays) -> np.ndarray | None:
    """The index of each arc's reverse, None when some arc has none (a graph has at most one
    arc per ordered pair, so an arc code ``tail * n + head`` names it)."""
    if ga.n_arcs == 0:
        return np.zeros(0, dtype=np.int64)
    return ga.reverse  # found once per arrays (GraphArrays.reverse), read-only



def rate_scale(ga: GraphArrays, ep_idx: np.ndarray) -> float:
    """The unit the phase-1 LPs count the rate in: the largest injection of an endpoint
    (:meth:`Fabric.injection_gbps`, for all at once), so their theta is near one."""
    loops = ga.tail != ga.head
    injection = np.bincount(ga.tail[loops], weights=ga.capacity[loops], minlength=ga.n_nodes)
    return float(injection[ep_idx].max()) or 1.0


def hub_shares(ga: GraphArrays, hub_idx: np.ndarray, ep_idx: np.ndarray,
               dead: np.ndarray | None = None) -> np.ndarray:
    """p: each hub's share of phase 1, in proportion to the capacity entering it from nodes
    on endpoint-to-endpoint paths (uniform on a symmetric top tier; 5:4:4:5 over the
    NVSwitches of a DGX H100). Automorphisms keep capacities, so the shares stay invariant.
    ``dead`` is :func:`_dead_ends` of ``ep_idx`` when the caller has it."""
    live = ~(_dead_ends(ga, ep_idx) if dead is None else dead)[ga.tail]
    cap_in = np.bincount(ga.head[live], weights=ga.capacity[live],
                         minlength=ga.n_nodes)[hub_idx]
    if not cap_in.max() > 0:
        raise InvalidParameterError("valiant_rate(): no capacity enters any of the hubs")
    # Round away summation-order noise (relative to the largest) so that symmetric hubs get
    # bitwise-equal shares.
    cap_in = np.round(cap_in / cap_in.max(), 12)
    return cap_in / cap_in.sum()


@dataclass
class _Arrays:
    """A fabric's arrays, each arc's reverse and (once the bounds stage needs them) the
    partitions of its hierarchy: read once for every hub level tried."""

    ga: GraphArrays
    rev: np.ndarray
    scale_up: np.ndarray
    partitions: list[np.ndarray] | None = None
    dead: tuple[bytes, np.ndarray] | None = None
    orbits: tuple[np.ndarray | None] | None = None
    #: The fabric's shape on ``ga``: its scale-up arcs, domains and hierarchy, read once.
    shape: FabricShape | None = None
    #: Each partition's capacities out and in and endpoints, for one set of endpoints.
    capacities: tuple[bytes, list[tuple[np.ndarray, np.ndarray, np.ndarray]]] | None = None

    def claim_orbits(self, fab: Any, ep_idx: np.ndarray) -> np.ndarray | None:
        """Arc orbits of the fabric's symmetry claim (read once), when ``ep_idx`` are all
        of its endpoints (a claim says nothing about a subset); else None."""
        if len(ep_idx) != len(fab.endpoints):
            return None
        if self.orbits is None:
            claim = fab.symmetry
            self.orbits = (None if claim is None else
                           fabric_arc_orbits(fab, self.ga, claim),)
        return self.orbits[0]

    def hierarchy(self, fab: Any) -> list[np.ndarray]:
        """The partitions of the fabric's hierarchy the cuts try (read once)."""
        if self.partitions is None:
            shape = self.shape if self.shape is not None else FabricShape.of(fab, self.ga)
            self.partitions = list(shape.hierarchy)
        return self.partitions

    def hierarchy_capacities(self, fab: Any, ep_idx: np.ndarray,
                             ) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
        """:func:`~fabricopt.flow.two_phase.bounds.group_capacities` of each partition of
        :meth:`hierarchy` for the endpoints ``ep_idx``, read once for every hub level."""
        key = ep_idx.tobytes()
        if self.capacities is None or self.capacities[0] != key:
            self.capacities = (key, [group_capacities(self.ga, label, ep_idx)
                                     for label in self.hierarchy(fab)])
        return self.capacities[1]

    def dead_ends(self, ep_idx: np.ndarray) -> np.ndarray:
        """:func:`_dead_ends` of ``ep_idx``, computed once per set of endpoints."""
        key = np.sort(ep_idx).tobytes()
        if self.dead is None or self.dead[0] != key:
            self.dead = (key, _dead_ends(self.ga, ep_idx))
        return self.dead[1]

    @classmethod
    def of(cls, fab: Any, ga: GraphArrays | None = None) -> _Arrays:
        ga = ga if ga is not None else GraphArrays.from_fabric(fab)
        rev = _reverse_arcs(ga)
        if rev is None:
            raise InvalidParameterError("valiant_rate(): every link needs both directions "
                                        "(phase 2 runs phase 1 backwards); see "
                                        "Fabric.validate()")
        shape = FabricShape.of(fab, ga)
        return cls(ga, rev, shape.scale_up, shape=shape)

    def scale_out_injection(self, eps: tuple[Hashable, ...]) -> float:
        """The least :meth:`~fabricopt.Fabric.scale_out_injection_gbps` of ``eps``, for
        all at once: capacity out on links that are not scale-up, or all of it without."""
        ga, n = self.ga, self.ga.n_nodes
        idx = np.array([ga.index[e] for e in eps])
        out = np.bincount(ga.tail[~self.scale_up], weights=ga.capacity[~self.scale_up],
                          minlength=n)[idx]
        every = np.bincount(ga.tail, weights=ga.capacity, minlength=n)[idx]
        return float(np.where(out > 0, out, every).min())
