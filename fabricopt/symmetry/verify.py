"""Proving a symmetry claim on a small fabric, by finding the automorphisms it needs."""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any

import networkx as nx
from networkx.algorithms.isomorphism import DiGraphMatcher

from ..errors import InvalidFabricError
from ..fabric import check_fabric
from ..symmetry_claim import Arc

__all__ = ["verify_symmetry"]


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
