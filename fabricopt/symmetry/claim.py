"""Symmetry claims that generators attach to the fabrics they build.

A generator that knows a group of automorphisms of its fabric records the arc orbits of that
group (any such group will do, a subgroup gives finer orbits) and, when the group is not
transitive on the endpoints, its orbits on them. The flow engine then solves one root's flow
per endpoint orbit with one capacity row per arc orbit, which is exact for traffic invariant
under the group (see ``docs/throughput.md#the-symmetric-method``).

A claim describes the graph as it was built. :meth:`Symmetry.matches` compares a cheap
fingerprint (node and arc counts, and one capacity per orbit) so that a fabric edited after
generation is never solved with a stale claim.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import networkx as nx

from ..errors import InvalidFabricError

Arc = tuple[Hashable, Hashable]


@dataclass(frozen=True)
class Symmetry:
    """Arc orbits of a group of automorphisms of a fabric, and its orbits on the endpoints.

    The group acts transitively on the endpoints unless ``endpoint_orbit`` says otherwise.

    Parameters
    ----------
    arc_orbit : mapping
        Orbit label of every arc ``(u, v)`` of the graph.
    group : str
        A short description of the group, for people (e.g. ``"pod and switch permutations"``).
    n_nodes, n_arcs : int
        Size of the graph the claim was made for.
    endpoints : frozenset
        The endpoints the claim is about; it says nothing about any other set of endpoints.
    endpoint_orbit : mapping, optional
        Orbit label of every endpoint when the group has several orbits on them (a failed
        or irregular fabric); None (the default) means one orbit: the group is transitive.

    Examples
    --------
    >>> import fabricopt as fo
    >>> fab = fo.ring(4)
    >>> fab.symmetry.n_orbits   # rotations and reflections map any arc to any other
    1
    """

    arc_orbit: Mapping[Arc, int]
    group: str
    n_nodes: int
    n_arcs: int
    endpoints: frozenset[Hashable]
    orbit_names: tuple[str, ...] = field(default=())
    endpoint_orbit: Mapping[Hashable, int] | None = None

    @property
    def n_orbits(self) -> int:
        """Number of distinct arc orbits."""
        return len(set(self.arc_orbit.values()))

    @property
    def transitive(self) -> bool:
        """True when the group maps every endpoint to every other (one endpoint orbit)."""
        return self.n_endpoint_orbits <= 1

    @property
    def n_endpoint_orbits(self) -> int:
        """Number of orbits of the group on the endpoints (1 for a transitive group)."""
        if self.endpoint_orbit is None:
            return 1 if self.endpoints else 0
        return len(set(self.endpoint_orbit.values()))

    def matches(self, graph: nx.DiGraph, endpoints: Iterable[Hashable]) -> bool:
        """True when ``graph`` and ``endpoints`` still look like what the claim was made for.

        Checks the endpoint set, the node and arc counts, that every claimed arc exists, and
        that all arcs of an orbit have the same capacity (an automorphism preserves
        capacities).
        """
        if graph.number_of_nodes() != self.n_nodes or graph.number_of_edges() != self.n_arcs:
            return False
        if frozenset(endpoints) != self.endpoints:
            return False
        if self.endpoint_orbit is not None and frozenset(self.endpoint_orbit) != self.endpoints:
            return False
        if len(self.arc_orbit) != self.n_arcs:
            return False
        seen: dict[int, float] = {}
        orbit_of = self.arc_orbit
        for u, v, cap in graph.edges(data="capacity"):
            orbit = orbit_of.get((u, v))
            if orbit is None or seen.setdefault(orbit, cap) != cap:
                return False
        return True


def verify_symmetry(fab: Any) -> None:
    """Prove a fabric's symmetry claim by finding automorphisms (small fabrics only).

    Checks that (1) for every endpoint there is an automorphism preserving roles, endpoints,
    capacities and orbit labels that maps the first endpoint of its claimed orbit (of all
    endpoints, when the group is transitive) to it, and (2) every arc of an orbit can be
    mapped onto the orbit's first arc the same way. Together these say the labels are exactly
    the arc orbits of a group (the automorphisms that preserve them), and every claimed
    endpoint orbit lies within one orbit of that group, which is what the symmetric flow LP
    needs. Cost grows fast with size: meant for tests and for users who
    want to check a claim on a small instance before trusting it on a large one.

    Raises
    ------
    InvalidFabricError
        If the fabric has no claim or the claim is wrong.

    Examples
    --------
    >>> import fabricopt as fo
    >>> verify_symmetry(fo.torus((3, 4)))
    """
    from networkx.algorithms.isomorphism import DiGraphMatcher

    from .._checks import check_fabric  # imported here: the checks import the data model

    check_fabric("verify_symmetry", fab)
    sym = fab.symmetry
    if sym is None:
        raise InvalidFabricError(f"fabric {fab.name!r} carries no (valid) symmetry claim")
    endpoint_set = set(fab.endpoints)

    undirected = fab.graph.to_undirected(as_view=True)

    def labelled(pins: dict[Hashable, int]) -> nx.DiGraph:
        # VF2 matches nodes in insertion order: starting from the pinned nodes and growing
        # outwards keeps it from backtracking through permutations of twin nodes (GPUs on the
        # same switches), which otherwise takes factorial time.
        order = dict.fromkeys(pins)
        for p in pins:
            order.update(dict.fromkeys(nx.bfs_tree(undirected, p)))
        order.update(dict.fromkeys(fab.graph))
        g = nx.DiGraph()
        for v in order:
            d = fab.graph.nodes[v]
            g.add_node(v, key=(d.get("role"), v in endpoint_set, pins.get(v)))
        for (u, v), orbit in sym.arc_orbit.items():
            g.add_edge(u, v, key=(orbit, fab.graph[u][v]["capacity"]))
        return g

    def automorphism_exists(pairs: list[tuple[Hashable, Hashable]]) -> bool:
        g1 = labelled({a: i for i, (a, _) in enumerate(pairs)})
        g2 = labelled({b: i for i, (_, b) in enumerate(pairs)})
        matcher = DiGraphMatcher(g1, g2, node_match=lambda x, y: x["key"] == y["key"],
                                 edge_match=lambda x, y: x["key"] == y["key"])
        return matcher.is_isomorphic()

    # Each endpoint must be the image of its orbit's first endpoint (the root the flow LP
    # solves for). Claimed orbits may be finer than the group's (a subgroup's orbits), never
    # coarser: that is all the symmetric LP needs.
    orbit_of = sym.endpoint_orbit or {}
    roots: dict[int, Hashable] = {}
    for e in fab.endpoints:
        root = roots.setdefault(orbit_of.get(e, 0), e)
        if e != root and not automorphism_exists([(root, e)]):
            raise InvalidFabricError(f"symmetry claim of {fab.name!r}: no automorphism maps "
                                     f"endpoint {root!r} to {e!r}, which its orbit claims")
    first: dict[int, Arc] = {}
    for arc, orbit in sym.arc_orbit.items():
        a0 = first.setdefault(orbit, arc)
        if arc != a0 and not automorphism_exists([(a0[0], arc[0]), (a0[1], arc[1])]):
            raise InvalidFabricError(f"symmetry claim of {fab.name!r}: arcs {a0!r} and "
                                     f"{arc!r} share orbit {orbit} but no automorphism maps "
                                     "one to the other")
